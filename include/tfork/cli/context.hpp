// SPDX-License-Identifier: Apache-2.0
#pragma once
// What every command gets: the global options (cli.md §3), the configuration and client
// (resolved lazily, so `tfork version` or `fork env` never read credentials), the renderer,
// the progress sink, and the interrupt flag.

#include "tfork/cli/command.hpp"
#include "tfork/cli/config.hpp"
#include "tfork/output/progress.hpp"
#include "tfork/output/render.hpp"
#include "tfork/tigris/client.hpp"
#include "tfork/workflow/batch.hpp"

#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace tfork::cli {

struct GlobalOptions {
  std::string output;  // "json" | "table" | "" (then TFORK_OUTPUT, then table)
  bool json = false;
  ConfigOverrides config;
  bool virtual_hosted = false;
  bool path_style = false;
  bool no_verify_ssl = false;
  int concurrency = 32;
  double connect_timeout = 10;
  double read_timeout = 60;
  int verbose = 0;
  bool debug = false;
  bool quiet = false;
  bool no_progress = false;
  std::string progress;  // --progress auto | plain | json | none ("": auto)
  bool no_color = false;
  bool yes = false;
  bool dry_run = false;
};

// Set by the SIGINT handler; the transport stops in-flight requests when it is set.
std::atomic<bool>& interrupted();
// main() blocks SIGINT and SIGTERM before anything else runs, so that no thread ever takes one
// by surprise (the mask is inherited by every thread). cli::run then installs the handler for
// every command but `serve`, which keeps them blocked and takes them with sigwait (cli.md §8).
void block_interrupts();
void install_interrupt_handler();  // SIGINT and SIGTERM set interrupted(); unblocks them
// 130 becomes 143 when the interruption was SIGTERM (cli.md §6); other codes pass.
int interrupted_exit_code(int code);

// The transport settings the global options ask for (timeouts, retries, TLS, --debug, -v),
// cancelled by interrupted(). What Context::client uses; `tfork mcp` builds one per call.
http::Options transport_options(const GlobalOptions& options, const Config& config);

class Context {
 public:
  explicit Context(Environment env = process_environment());
  ~Context();

  GlobalOptions options;
  // What the parsed command line selected (set through on_run); cli::run calls it.
  CommandRun selected_command;
  // What follows the first `--` on the command line: an agent's command (`fork exec`, `run`),
  // never parsed as tfork's options. `takes_command` is set while parsing by the commands that
  // accept one; for any other, a `--` is a usage error.
  bool has_separator = false;
  std::vector<std::string> command_after_separator;
  bool takes_command = false;
  // Set while parsing by `serve`: it takes SIGINT and SIGTERM itself, and cli::run leaves them
  // blocked instead of installing install_interrupt_handler().
  bool takes_signals = false;

  const Environment& env() const { return env_; }
  const Config& config();
  tigris::Client& client();  // resolves credentials on first use
  // "sent to <endpoint> (IAM <iam endpoint>) with access key <id>": for an access-denied
  // error, which identity and which service said no; "" before any request was prepared.
  std::string identity_hint() const;
  // The access key id the client signs with, when a client was made (never resolves one).
  std::optional<std::string> access_key_in_use() const;

  output::Format format() const;
  // How progress is shown (issue 26 §1, cli.md §6): --progress json asks for events whatever
  // else is said; -q, --no-progress and --progress none for nothing; --progress plain for
  // plain lines; otherwise (auto) the live line on a terminal and plain lines elsewhere.
  output::ProgressMode progress_mode() const;
  // Whether a person reads stderr: progress lines are drawn there (and a run summary belongs).
  bool progress_for_people() const;
  // The progress sink of this run (made on first use), or null when nothing is shown.
  output::ProgressSink* progress();
  // The run is over: a live progress line is erased before the result is printed.
  void end_progress();
  // How the batches of a command run: --concurrency, interrupted() and progress().
  workflow::BatchSettings batch_settings();

  // --dry-run: the requests that would be sent (signature redacted), as the command's
  // result; nothing is sent.
  CommandResult dry_run(std::span<const tigris::Operation> operations);
  // An operator's act that writes into or deletes what is not a fork (merge, rebase, a forced
  // bucket delete): with --yes it goes on; on a terminal it asks QUESTION [y/N]; elsewhere it
  // throws a usage error (exit 64) before anything is sent. Anything but y/yes (end of input
  // included) is no: "not confirmed; nothing was changed" (exit 1); Ctrl-C at the question
  // ends tfork at once (exit 130).
  void confirm(const std::string& question) const;

 private:
  Environment env_;
  std::optional<Config> config_;
  std::unique_ptr<http::Transport> transport_;
  std::unique_ptr<tigris::Client> client_;
  std::unique_ptr<output::ProgressSink> progress_;
  bool progress_made_ = false;
};

}  // namespace tfork::cli
