// SPDX-License-Identifier: Apache-2.0
// tfork fork exec and tfork run (cli.md §10, §11): one process per agent, each with exactly
// its fork's environment, in parallel; a result row per agent, each agent's end recorded in
// the manifest; exit 0 / 7 / 130 / 143. `run` is fork create + fork exec + teardown of the
// forks it does not keep, and its manifest stays.
#include "tfork/cli/context.hpp"
#include "tfork/cli/values.hpp"
#include "tfork/commands/fork.hpp"
#include "tfork/commands/run.hpp"
#include "tfork/core/error.hpp"
#include "tfork/output/render.hpp"
#include "tfork/workflow/agent_env.hpp"
#include "tfork/workflow/agent_runner.hpp"
#include "tfork/workflow/fork_batch.hpp"
#include "tfork/workflow/manifest.hpp"
#include "tfork/workflow/teardown.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <set>
#include <string>

namespace tfork::commands {
namespace {

// Signals received while agents run: counted, not fatal (a second one kills the agents).
// The transport's cancel flag is raised too, so requests in flight end at once.
std::atomic<int> g_stop_signal{0};
std::atomic<int> g_stop_count{0};

extern "C" void on_stop_signal(int sig) {
  int expected = 0;
  g_stop_signal.compare_exchange_strong(expected, sig);
  g_stop_count.fetch_add(1);
  cli::interrupted().store(true);
}

// Installs the handlers for SIGINT and SIGTERM; the previous ones come back afterwards.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    g_stop_count = 0;
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &old_int_);
    ::sigaction(SIGTERM, &action, &old_term_);
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  static workflow::StopRequests requests() { return {g_stop_signal.load(), g_stop_count.load()}; }
  static Error stop_error() {
    return g_stop_signal.load() == SIGTERM
               ? Error{ErrorKind::terminated, "Terminated", "terminated (SIGTERM)", 0, {}}
               : Error{ErrorKind::interrupted, "Interrupted", "interrupted (SIGINT)", 0, {}};
  }

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// The options fork exec and run share.
struct AgentOptions {
  std::size_t parallel = 0;
  std::string logs;
  std::string timeout;
};

void add_agent_options(CLI::App& command, AgentOptions& options) {
  command.add_option("--parallel", options.parallel, "Agents running at once (default: all)")
      ->check(cli::whole_number("--parallel", 1, 100000));
  command.add_option("--logs", options.logs,
                     "Write each agent's output to DIR/<fork>.log instead of prefixed lines on "
                     "stderr");
  command.add_option("--timeout", options.timeout,
                     "Per agent: SIGTERM after DURATION (90, 90s, 5m, 2h), SIGKILL 10 s later");
}

workflow::ExecOptions exec_options(const AgentOptions& options) {
  workflow::ExecOptions out;
  out.parallel = options.parallel;
  if (!options.logs.empty()) out.logs_dir = options.logs;
  if (!options.timeout.empty()) {
    out.timeout = workflow::parse_duration(options.timeout);
    if (!out.timeout)
      usage_error("--timeout '" + options.timeout + "': expected a duration such as 90s, 5m, 2h");
  }
  return out;
}

// The agent's command: what followed `--` (cli::run keeps it away from CLI11).
std::vector<std::string> agent_command(const cli::Context& context) {
  if (!context.has_separator || context.command_after_separator.empty())
    usage_error("put the agent's command after --: ... -- CMD [ARG...]");
  return context.command_after_separator;
}

// Runs the agents with the stop-signal handlers in place; records their ends in the
// manifest file.
workflow::ExecOutcome run_and_record(const std::vector<workflow::AgentSpec>& specs,
                                     const workflow::ExecOptions& options,
                                     workflow::Manifest& manifest,
                                     const std::filesystem::path& manifest_path) {
  auto outcome = workflow::run_agents(specs, options, workflow::current_environment(),
                                      StopSignals::requests, std::cerr);
  workflow::record_agents(manifest, outcome);
  workflow::write_manifest(manifest_path, manifest, true);
  return outcome;
}

// ---- fork exec

struct ExecCommandOptions {
  std::string manifest;
  std::vector<std::string> positionals;
  AgentOptions agents;
};

cli::CommandResult run_exec(const ExecCommandOptions& options, cli::Context& context) {
  const auto& selectors = options.positionals;
  const auto command = agent_command(context);
  const auto run_options = exec_options(options.agents);
  auto manifest = workflow::read_manifest(options.manifest);
  const auto specs = workflow::plan_agents(manifest, selectors, command);
  StopSignals signals;
  const auto outcome = run_and_record(specs, run_options, manifest, options.manifest);
  auto result = cli::document(
      output::Json{{"manifest", options.manifest}, {"agents", workflow::agents_json(outcome)}},
      workflow::agents_table(outcome));
  result.error = workflow::exec_error(outcome);
  return result;
}

// ---- run

struct RunOptions {
  fork::CreateOptions create;  // what fork create takes, mapped to its plan by plan_create
  std::string keep = "none";
  AgentOptions agents;
};

bool kept(const std::string& keep, const workflow::AgentResult& agent) {
  if (keep == "all") return true;
  if (keep == "succeeded") return agent.succeeded();
  if (keep == "failed") return !agent.succeeded();
  return false;
}

cli::CommandResult run_run(const RunOptions& options, cli::Context& context) {
  const auto agent = agent_command(context);
  if (options.create.keys == "none")
    usage_error("run gives each agent a key: --keys none cannot run");
  const auto run_options = exec_options(options.agents);

  // The run's record always exists (cli.md §10: the manifest stays): a run mints keys, so
  // fork create's plan always has a manifest (default ./<prefix>.manifest.json).
  const auto plan = fork::plan_create(options.create);
  if (context.options.dry_run) return context.dry_run(workflow::fork_create_operations(plan));

  // From here on, Ctrl-C or SIGTERM at any moment leaves a manifest that `teardown
  // --manifest` finishes: fork create keeps it complete, the agents get the signal, and the
  // run stops before its own teardown.
  StopSignals signals;
  auto created = workflow::run_fork_create(context.client(), plan, context.batch_settings());
  const auto manifest_path = *plan.manifest_path;
  auto manifest = created.manifest;
  output::Json document{{"manifest", manifest_path.string()}};
  if (created.error) {
    auto result = cli::document(workflow::to_json(manifest), workflow::to_table(manifest));
    result.error = g_stop_count.load() > 0 ? StopSignals::stop_error() : *created.error;
    return result;
  }

  const auto specs = workflow::plan_agents(manifest, {}, agent);
  const auto outcome = run_and_record(specs, run_options, manifest, manifest_path);
  document["agents"] = workflow::agents_json(outcome);
  std::string text = workflow::agents_table(outcome);
  if (outcome.interrupted_by != 0 || g_stop_count.load() > 0) {
    auto result = cli::document(std::move(document), std::move(text));
    result.error = StopSignals::stop_error();
    result.error->message +=
        "; the forks are kept: tfork teardown --manifest " + manifest_path.string();
    return result;
  }

  // Teardown of the forks not kept.
  std::set<std::string> kept_buckets;
  std::vector<std::string> kept_in_order;
  std::size_t to_remove = 0;
  for (const auto& ended : outcome.agents) {
    if (kept(options.keep, ended)) {
      kept_buckets.insert(ended.bucket);
      kept_in_order.push_back(ended.bucket);
    } else {
      ++to_remove;
    }
  }
  document["kept"] = kept_in_order;
  std::optional<Error> teardown_error;
  if (to_remove > 0) {
    // Planned from the whole manifest, so that teardown records each removed fork as deleted
    // in the file while the kept forks' keys stay in it; the run's snapshot goes only once
    // no kept fork uses it.
    auto teardown_plan = workflow::plan_from_manifests(
        {workflow::ManifestFile{manifest_path, manifest}}, false, false);
    std::erase_if(teardown_plan.targets, [&](const workflow::TeardownTarget& target) {
      return kept_buckets.contains(target.bucket);
    });
    const auto removed =
        workflow::run_teardown(context.client(), teardown_plan, context.batch_settings());
    document["teardown"] = workflow::to_json(removed);
    teardown_error = removed.error;
  } else {
    document["teardown"] = nullptr;
  }
  text += fmt::format("kept {} of {} forks (--keep {}); manifest: {}\n", kept_buckets.size(),
                      outcome.agents.size(), options.keep, manifest_path.string());
  auto result = cli::document(std::move(document), std::move(text));
  result.error = teardown_error ? teardown_error : workflow::exec_error(outcome);
  if (g_stop_count.load() > 0) result.error = StopSignals::stop_error();
  return result;
}

}  // namespace

namespace fork {

void add_fork_exec(CLI::App& fork, cli::Context& context) {
  auto options = std::make_shared<ExecCommandOptions>();
  auto* command = fork.add_subcommand(
      "exec", "Run a command once per fork, each with only its own fork's environment");
  command->footer(
      "Each agent gets the variables of `fork env` and none of the caller's credentials.\n"
      "{bucket} and {index} in the command are replaced per agent. Output lines go to stderr\n"
      "prefixed [<fork>] (or to --logs DIR/<fork>.log); stdout gets one row per agent.\n"
      "SIGINT/SIGTERM are forwarded to every agent. Exit 0 when every agent exited 0, 7 when\n"
      "some did not, 130/143 when interrupted; each agent's end is kept in the manifest." +
      std::string("\n\n") + command->get_footer());
  command->add_option("--manifest", options->manifest, "The manifest of fork create")->required();
  command->add_option("FORK", options->positionals,
                      "Forks by 1-based index or name (default: every fork with a key); the "
                      "command follows --");
  command->parse_complete_callback([&context] { context.takes_command = true; });
  add_agent_options(*command, options->agents);
  cli::on_run(*command, context, [options, &context] { return run_exec(*options, context); });
}

}  // namespace fork

void register_run(CLI::App& root, cli::Context& context) {
  auto options = std::make_shared<RunOptions>();
  auto* command = root.add_subcommand(
      "run", "fork create + fork exec + teardown of the forks not kept, in one command");
  command->footer(
      "The manifest stays, so that kept forks can be diffed, merged or torn down later.\n"
      "Ctrl-C (or SIGTERM) at any moment stops the run with a manifest that `teardown\n"
      "--manifest` finishes. Exit as fork exec, or the error of fork create or teardown." +
      std::string("\n\n") + command->get_footer());
  command->add_option("SOURCE", options->create.source, "The bucket to fork (snapshot-enabled)")
      ->required();
  command->parse_complete_callback([&context] { context.takes_command = true; });
  command
      ->add_option("-n,--count", options->create.count,
                   fmt::format("How many agents (forks), 1-{}", workflow::k_max_forks))
      ->check(cli::whole_number("-n", 1, workflow::k_max_forks))
      ->required();
  command->add_option("--prefix", options->create.prefix,
                      "Fork name prefix (default <source>-fork-<unix-ms>)");
  command->add_option("--snapshot", options->create.snapshot,
                      "Fork from this snapshot instead of taking one");
  command->add_option("--snapshot-name", options->create.snapshot_name,
                      "Name of the snapshot taken (default 'tfork <prefix>')");
  command->add_option("--keys", options->create.keys, "Key per fork: editor (default) or readonly")
      ->check(cli::one_of("--keys", {"editor", "readonly"}));
  command->add_option("--manifest", options->create.manifest,
                      "Where the run's manifest goes (default ./<prefix>.manifest.json)");
  command
      ->add_option("--keep", options->keep,
                   "Forks kept afterwards: none (default), failed, succeeded, all")
      ->check(cli::one_of("--keep", {"none", "failed", "succeeded", "all"}));
  add_agent_options(*command, options->agents);
  cli::on_run(*command, context, [options, &context] { return run_run(*options, context); });
}

}  // namespace tfork::commands
