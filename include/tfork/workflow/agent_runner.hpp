// SPDX-License-Identifier: Apache-2.0
#pragma once
// Running one process per agent (cli.md §11, §12): `fork exec` and `run`. Each agent gets
// exactly its fork's environment (agent_env.hpp), in the sandbox of `ExecOptions::sandbox`
// (sandbox.hpp), in its own process group (under bwrap: its own session and PID namespace),
// so a terminal's Ctrl-C reaches it only through tfork and a signal reaches its children too;
// stdin is /dev/null; its output lines go to one sink prefixed with its fork, or to a log
// file of its own.
//
// Contract:
// * At most `parallel` agents run at once (0: all); they start in input order.
// * `stop_requests()` is polled; at the first request (SIGINT or SIGTERM received by tfork)
//   that signal is sent to every running agent's process group, no further agent starts, and
//   run_agents returns once every started agent has ended (agents never started are reported
//   `started: false`). A second request sends SIGKILL to every agent still running.
// * `timeout`: an agent still running after it gets SIGTERM, then SIGKILL `kill_after` later.
// * Lines are written whole: two agents' lines never interleave within a line. A line longer
//   than 64 KiB is cut into 64 KiB pieces; a last line without a newline is still written.
//   Control characters in a line are escaped (colour sequences kept), so an agent cannot move
//   the cursor over another agent's prefix or reach the terminal with anything but text.
// * Under bwrap, an agent's signals go to its sandbox's session once its process is there;
//   the sandbox (every process the agent left behind included) ends with the agent, and with
//   tfork. bwrap reports a signal's end as 128+N: it is taken for signal N when tfork sent
//   the agent a signal, else kept as the exit code.

#include "tfork/core/error.hpp"
#include "tfork/output/render.hpp"
#include "tfork/workflow/agent_env.hpp"
#include "tfork/workflow/duration.hpp"
#include "tfork/workflow/sandbox.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace tfork::workflow {

// What an agent wrote in its fork (--usage): objects written since the fork's snapshot.
struct ForkUsage {
  std::int64_t objects = 0;
  std::int64_t bytes = 0;
  std::string error;  // the listing failed ("" when it did not)
};

struct AgentSpec {
  AgentEnv env;
  std::vector<std::string> argv;  // {bucket} and {index} already replaced
};

struct ExecOptions {
  std::size_t parallel = 0;  // 0: every agent at once
  Sandbox sandbox;           // kind none by default: the command layer plans the real one
  std::optional<std::filesystem::path> logs_dir;
  std::optional<std::chrono::milliseconds> timeout;
  std::chrono::milliseconds kill_after{10'000};
};

struct AgentResult {
  std::string bucket;
  std::size_t index = 0;
  bool started = false;
  std::optional<int> exit_code;  // when it exited
  std::optional<int> signal;     // when a signal ended it
  bool timed_out = false;
  double seconds = 0;
  std::string error;               // why it could not start ("" when it did)
  std::string sandbox;             // "bwrap" | "none"
  std::filesystem::path workdir;   // where it worked ("" : tfork's working directory)
  std::optional<ForkUsage> usage;  // with --usage

  bool succeeded() const { return started && exit_code == 0; }
};

// Signals tfork received while agents run: the first one's number, and how many.
struct StopRequests {
  int signal = 0;
  int count = 0;
};

struct ExecOutcome {
  std::vector<AgentResult> agents;  // in input order
  int interrupted_by = 0;           // SIGINT / SIGTERM when tfork was interrupted, else 0
};

// {bucket} and {index} in each argument replaced with the agent's values.
std::vector<std::string> substitute(const std::vector<std::string>& argv, const AgentEnv& env);

// Runs every agent; `lines` receives "[<fork>] <line>\n" records (unused with logs_dir).
// `base_environment` is the parent's environment (NAME=value) that each agent's is made from.
ExecOutcome run_agents(const std::vector<AgentSpec>& agents, const ExecOptions& options,
                       const std::vector<std::string>& base_environment,
                       const std::function<StopRequests()>& stop_requests, std::ostream& lines);

// This process's environment as NAME=value strings.
std::vector<std::string> current_environment();

// ---- planning and reporting (fork exec and run)

// The agents to run, in manifest order, each with `command` ({bucket}/{index} replaced):
// every live fork with a key when `selectors` is empty, else the selected ones (a 1-based
// index or a bucket name, each once). Throws TforkError for a selector that names no usable
// fork (agent_env's rules), and not_found when no fork is usable at all.
std::vector<AgentSpec> plan_agents(const Manifest& manifest,
                                   const std::vector<std::string>& selectors,
                                   const std::vector<std::string>& command);

// cli.md §6: [{"bucket","index","exit_code","signal","seconds"}]: "signal" is the name of
// the signal that ended the agent ("SIGTERM") or null; "exit_code" is null when it did not
// exit by itself; an agent never started has both null and "started": false.
// Also "sandbox" ("bwrap" | "none"), "workdir" (null: tfork's working directory) and, with
// --usage, "usage": {"objects", "bytes"} (or nulls and "error").
output::Json agents_json(const ExecOutcome& outcome);
std::string agents_table(const ExecOutcome& outcome);  // OBJECTS and BYTES with --usage
// One line for people: how many exited 0, the longest time, what they wrote, where.
std::string agents_summary(const ExecOutcome& outcome);

// --dry-run (issue 21 §3): each agent's fork, index, command, sandbox, working directory and
// the names (never the values) of its variables; nothing runs.
output::Json agents_plan_json(const std::vector<AgentSpec>& specs, const Sandbox& sandbox);
std::string agents_plan_table(const std::vector<AgentSpec>& specs, const Sandbox& sandbox);

// Each agent's end in its manifest entry ("agent": {"exit_code","signal","seconds",
// "workdir"}).
void record_agents(Manifest& manifest, const ExecOutcome& outcome);

// The outcome as an error: none when every agent exited 0; interrupted (130) or terminated
// (143) when tfork was; else partial (7) naming the agents that did not succeed.
std::optional<Error> exec_error(const ExecOutcome& outcome);

}  // namespace tfork::workflow
