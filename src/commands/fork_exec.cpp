// SPDX-License-Identifier: Apache-2.0
// tfork fork exec and tfork run (cli.md §10–§12): one process per agent, each with exactly
// its fork's environment, in a sandbox of its own by default, in parallel; a result row per
// agent, each agent's end recorded in the manifest; exit 0 / 7 / 130 / 143. `run` is fork
// create + fork exec + teardown of the forks it does not keep (also when interrupted, unless
// --keep-on-interrupt), and its manifest stays.
#include "tfork/cli/context.hpp"
#include "tfork/cli/help.hpp"
#include "tfork/cli/values.hpp"
#include "tfork/commands/fork.hpp"
#include "tfork/commands/fork_create_options.hpp"
#include "tfork/commands/run.hpp"
#include "tfork/core/error.hpp"
#include "tfork/output/render.hpp"
#include "tfork/workflow/agent_env.hpp"
#include "tfork/workflow/agent_runner.hpp"
#include "tfork/workflow/agent_usage.hpp"
#include "tfork/workflow/fork_batch.hpp"
#include "tfork/workflow/manifest.hpp"
#include "tfork/workflow/sandbox.hpp"
#include "tfork/workflow/teardown.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
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
  static bool stopped() { return g_stop_count.load() > 0; }
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
  std::string sandbox = "auto";
  std::string workdir;
  std::vector<std::string> binds;
  std::vector<std::string> ro_binds;
  std::vector<std::string> env;
  bool usage = false;
};

void add_agent_options(CLI::App& command, AgentOptions& options) {
  command.add_option("--parallel", options.parallel, "Agents running at once (default: all)")
      ->check(cli::whole_number("--parallel", 1, 100000));
  command
      .add_option("--logs", options.logs,
                  "Write each agent's output to DIR/<fork>.log instead of prefixed lines on "
                  "stderr")
      ->type_name("DIR");
  command
      .add_option("--timeout", options.timeout,
                  "Per agent: SIGTERM after DURATION (90, 90s, 5m, 2h), SIGKILL 10 s later")
      ->type_name("DURATION");
  command
      .add_option("--sandbox", options.sandbox,
                  "auto (default: bubblewrap), bwrap, or none (the agent can read your files)")
      ->transform(cli::one_of("--sandbox", {"auto", "bwrap", "none"}));
  command
      .add_option("--workdir", options.workdir,
                  "Each agent works in DIR/<fork>, kept afterwards (default: "
                  "<manifest>.work beside the manifest)")
      ->type_name("DIR");
  command
      .add_option("--bind", options.binds,
                  "Share SRC[:DST] with every agent, writable (repeatable)")
      ->type_name("SRC[:DST]");
  command
      .add_option("--ro-bind", options.ro_binds,
                  "Share SRC[:DST] with every agent, read-only (repeatable): code, a model "
                  "cache")
      ->type_name("SRC[:DST]");
  command
      .add_option("--env", options.env, "Pass variable NAME of yours to every agent (repeatable)")
      ->type_name("NAME");
  command.add_flag("--usage", options.usage,
                   "After the agents: the objects and bytes each wrote in its fork (a listing "
                   "of each fork)");
}

// What `fork exec --help` and `run --help` say about the sandbox (cli.md §12).
const char* const k_sandbox_help =
    "Each agent starts in a bubblewrap sandbox (--sandbox none: without one, with a warning):\n"
    "its own working directory DIR/<fork> (kept), a private empty HOME and /tmp, its own PID\n"
    "namespace, no terminal, stdin /dev/null, the rest of the file system read-only; your\n"
    "HOME, every manifest nearby and the other agents' directories are not there at all. The\n"
    "network stays on. Its environment is an allowlist: PATH, LANG, LC_*, TERM, TZ, the\n"
    "fork's variables (fork env) and the --env names. Same uid, same kernel: not a container.\n"
    "Debian 12's AWS CLI (2.9) and boto3 (1.26) ignore AWS_ENDPOINT_URL and the endpoint_url\n"
    "the sandbox writes in ~/.aws/config (both need AWS CLI 2.13 / botocore 1.31): give them\n"
    "--endpoint-url \"$AWS_ENDPOINT_URL\" (boto3: "
    "endpoint_url=os.environ[\"AWS_ENDPOINT_URL\"]).\n";

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

workflow::SandboxRequest sandbox_request(const AgentOptions& options,
                                         const std::filesystem::path& manifest) {
  workflow::SandboxRequest request;
  request.mode = options.sandbox;
  if (!options.workdir.empty()) request.workdir = options.workdir;
  for (const auto& text : options.ro_binds)
    request.shared.push_back(workflow::parse_shared_path(text, false));
  for (const auto& text : options.binds)
    request.shared.push_back(workflow::parse_shared_path(text, true));
  request.pass_env = options.env;
  request.manifest = manifest;
  if (!options.logs.empty()) request.logs_dir = options.logs;
  request.cwd = std::filesystem::current_path();
  return request;
}

// The sandbox for the run, decided before anything is created; --sandbox none says once what
// it gives away.
workflow::Sandbox plan_sandbox(const AgentOptions& options, const std::filesystem::path& manifest,
                               bool dry_run) {
  auto sandbox =
      workflow::plan_sandbox(sandbox_request(options, manifest), workflow::current_environment());
  if (sandbox.kind == workflow::SandboxKind::none && !dry_run)
    spdlog::warn(
        "--sandbox none: the agents run as you, without a sandbox, and can read your "
        "files (your HOME, every manifest, each other's directories)");
  return sandbox;
}

// Every agent's launch is built once before any starts: a manifest value that cannot go
// into an agent's files stops the run here (exit 64), not halfway.
void check_launches(const std::vector<workflow::AgentSpec>& specs,
                    const workflow::Sandbox& sandbox) {
  const auto environment = workflow::current_environment();
  for (const auto& spec : specs)
    workflow::launch_for(sandbox, spec.env, spec.argv, environment);
}

std::vector<std::string> buckets_of(const std::vector<workflow::AgentSpec>& specs) {
  std::vector<std::string> out;
  for (const auto& spec : specs)
    out.push_back(spec.env.bucket);
  return out;
}

// The agent's command: what followed `--` (cli::run keeps it away from CLI11).
std::vector<std::string> agent_command(const cli::Context& context) {
  if (!context.has_separator || context.command_after_separator.empty())
    usage_error("put the agent's command after --: ... -- CMD [ARG...]");
  return context.command_after_separator;
}

output::Json sandbox_json(const workflow::Sandbox& sandbox) {
  output::Json hidden = output::Json::array();
  for (const auto& path : sandbox.hidden)
    hidden.push_back(path.string());
  output::Json masked = output::Json::array();
  for (const auto& path : sandbox.masked)
    masked.push_back(path.string());
  output::Json shared = output::Json::array();
  for (const auto& path : sandbox.shared)
    shared.push_back(output::Json{{"source", path.source.string()},
                                  {"destination", path.destination.string()},
                                  {"writable", path.writable}});
  return output::Json{{"kind", workflow::sandbox_name(sandbox.kind)},
                      {"workdir", output::json_or_null(sandbox.workdir_root.string())},
                      {"home", output::json_or_null(sandbox.home.string())},
                      {"hidden", hidden},
                      {"masked", masked},
                      {"shared", shared}};
}

// Runs the agents with the stop-signal handlers in place; with --usage, lists what each
// wrote; records their ends in the manifest file.
workflow::ExecOutcome run_and_record(const std::vector<workflow::AgentSpec>& specs,
                                     const workflow::ExecOptions& options, bool usage,
                                     cli::Context& context, workflow::Manifest& manifest,
                                     const std::filesystem::path& manifest_path) {
  auto outcome = workflow::run_agents(specs, options, workflow::current_environment(),
                                      StopSignals::requests, std::cerr);
  if (usage && !StopSignals::stopped())
    workflow::measure_usage(context.client(), manifest, outcome,
                            static_cast<std::size_t>(context.options.concurrency));
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
  auto run_options = exec_options(options.agents);
  auto manifest = workflow::read_manifest(options.manifest);
  const auto specs = workflow::plan_agents(manifest, selectors, command);
  run_options.sandbox = plan_sandbox(options.agents, options.manifest, context.options.dry_run);
  check_launches(specs, run_options.sandbox);
  if (context.options.dry_run)
    return cli::document(
        output::Json{{"dry_run", true},
                     {"manifest", options.manifest},
                     {"sandbox", sandbox_json(run_options.sandbox)},
                     {"agents", workflow::agents_plan_json(specs, run_options.sandbox)}},
        workflow::agents_plan_table(specs, run_options.sandbox));
  workflow::prepare_workdirs(run_options.sandbox, buckets_of(specs));
  StopSignals signals;
  const auto outcome =
      run_and_record(specs, run_options, options.agents.usage, context, manifest, options.manifest);
  auto result = cli::document(
      output::Json{{"manifest", options.manifest}, {"agents", workflow::agents_json(outcome)}},
      workflow::agents_table(outcome));
  result.notice = workflow::agents_summary(outcome);
  result.error = workflow::exec_error(outcome);
  return result;
}

// ---- run

struct RunOptions {
  ForkCreateOptions create;
  std::string keep = "none";
  bool keep_on_interrupt = false;
  AgentOptions agents;
};

bool kept(const std::string& keep, const workflow::AgentResult* agent) {
  if (keep == "all") return true;
  const bool succeeded = agent && agent->succeeded();
  if (keep == "succeeded") return succeeded;
  if (keep == "failed") return !succeeded;
  return false;
}

// The manifest with placeholder keys, so that a dry run can show each agent's command and
// variables before any fork or key exists.
workflow::Manifest planned_manifest(const workflow::ForkCreatePlan& plan, cli::Context& context) {
  workflow::Manifest manifest;
  manifest.source = plan.source;
  manifest.endpoint = context.config().endpoint;
  manifest.iam_endpoint = context.config().iam_endpoint;
  for (const auto& name : plan.names) {
    workflow::ManifestFork fork;
    fork.bucket = name;
    fork.status = workflow::ForkStatus::created;
    fork.access_key_id = "(minted by the run)";
    fork.secret_access_key = "(minted by the run)";
    fork.role = plan.role;
    manifest.forks.push_back(std::move(fork));
  }
  return manifest;
}

struct TeardownDone {
  output::Json json;
  std::optional<Error> error;
};

// Tears down every fork of the manifest but `kept_buckets`: planned from the whole manifest,
// so that teardown records each removed fork as deleted in the file while the kept forks'
// keys stay in it; the run's snapshot goes only once no kept fork uses it.
TeardownDone tear_down_unkept(cli::Context& context, const std::filesystem::path& manifest_path,
                              const workflow::Manifest& manifest,
                              const std::set<std::string>& kept_buckets) {
  auto plan = workflow::plan_from_manifests({workflow::ManifestFile{manifest_path, manifest}},
                                            false, false);
  std::erase_if(plan.targets, [&](const workflow::TeardownTarget& target) {
    return kept_buckets.contains(target.bucket);
  });
  const auto removed = workflow::run_teardown(context.client(), plan, context.batch_settings());
  return {workflow::to_json(removed), removed.error};
}

// A run stopped by SIGINT/SIGTERM (issue 26 §2): what --keep would tear down goes, then exit
// 130/143. The stop lowered the transport's cancel flag; it is raised again for this
// teardown, so that only a further signal cuts it short.
cli::CommandResult stopped_run(const RunOptions& options, cli::Context& context,
                               const std::filesystem::path& manifest_path,
                               const workflow::Manifest& manifest, output::Json document,
                               std::string text, const workflow::ExecOutcome* outcome) {
  auto result_error = StopSignals::stop_error();
  if (options.keep_on_interrupt) {
    result_error.message +=
        "; the forks are kept (--keep-on-interrupt): tfork teardown --manifest " +
        manifest_path.string();
    auto result = cli::document(std::move(document), std::move(text));
    result.error = std::move(result_error);
    return result;
  }
  std::set<std::string> kept_buckets;
  for (const auto& fork : manifest.forks) {
    const workflow::AgentResult* agent = nullptr;
    if (outcome)
      for (const auto& ended : outcome->agents)
        if (ended.bucket == fork.bucket) agent = &ended;
    if (kept(options.keep, agent)) kept_buckets.insert(fork.bucket);
  }
  const int signals_before = g_stop_count.load();
  cli::interrupted().store(false);
  auto done = tear_down_unkept(context, manifest_path, manifest, kept_buckets);
  document["kept"] = std::vector<std::string>(kept_buckets.begin(), kept_buckets.end());
  document["teardown"] = std::move(done.json);
  if (g_stop_count.load() > signals_before)
    result_error.message += "; its teardown was interrupted too: tfork teardown --manifest " +
                            manifest_path.string() + " finishes it";
  else if (done.error)
    result_error.message += "; its teardown failed (" + done.error->message +
                            "): tfork teardown --manifest " + manifest_path.string();
  else
    result_error.message += fmt::format("; tore down what --keep {} does not keep ({} kept)",
                                        options.keep, kept_buckets.size());
  text += fmt::format("kept {} of {} forks (--keep {}); manifest: {}\n", kept_buckets.size(),
                      manifest.forks.size(), options.keep, manifest_path.string());
  auto result = cli::document(std::move(document), std::move(text));
  result.error = std::move(result_error);
  return result;
}

cli::CommandResult run_run(const RunOptions& options, cli::Context& context) {
  const auto agent = agent_command(context);
  auto run_options = exec_options(options.agents);
  // The same mapping as `fork create` (issue 25 §1): the run's record always exists
  // (cli.md §10: the manifest stays), default ./<prefix>.manifest.json.
  const auto clock = now_ms();
  auto plan = plan_fork_create(options.create, clock);
  // The manifest is this run's until it ends (teardown included); read again once claimed.
  std::optional<workflow::ManifestClaim> claim;
  if (!context.options.dry_run) {
    claim.emplace(*plan.manifest_path);
    plan = plan_fork_create(options.create, clock);
  }
  const auto manifest_path = *plan.manifest_path;
  run_options.sandbox = plan_sandbox(options.agents, manifest_path, context.options.dry_run);
  if (context.options.dry_run) {
    auto result = context.dry_run(workflow::fork_create_operations(plan));
    const auto specs = workflow::plan_agents(planned_manifest(plan, context), {}, agent);
    (*result.document)["sandbox"] = sandbox_json(run_options.sandbox);
    (*result.document)["agents"] = workflow::agents_plan_json(specs, run_options.sandbox);
    result.text += workflow::agents_plan_table(specs, run_options.sandbox);
    return result;
  }

  // From here on, Ctrl-C or SIGTERM at any moment leaves a manifest that `teardown
  // --manifest` finishes: fork create keeps it complete, the agents get the signal, and the
  // run tears down what --keep does not keep.
  StopSignals signals;
  auto created = workflow::run_fork_create(context.client(), plan, context.batch_settings());
  auto manifest = created.manifest;
  output::Json document{{"manifest", manifest_path.string()}};
  if (created.error) {
    if (StopSignals::stopped())
      return stopped_run(options, context, manifest_path, manifest, workflow::to_json(manifest),
                         workflow::to_table(manifest), nullptr);
    auto result = cli::document(workflow::to_json(manifest), workflow::to_table(manifest));
    result.error = std::move(created.error);
    return result;
  }

  const auto specs = workflow::plan_agents(manifest, {}, agent);
  check_launches(specs, run_options.sandbox);
  workflow::prepare_workdirs(run_options.sandbox, buckets_of(specs));
  const auto outcome =
      run_and_record(specs, run_options, options.agents.usage, context, manifest, manifest_path);
  document["agents"] = workflow::agents_json(outcome);
  std::string text = workflow::agents_table(outcome);
  if (outcome.interrupted_by != 0 || StopSignals::stopped())
    return stopped_run(options, context, manifest_path, manifest, std::move(document),
                       std::move(text), &outcome);

  std::set<std::string> kept_buckets;
  for (const auto& ended : outcome.agents)
    if (kept(options.keep, &ended)) kept_buckets.insert(ended.bucket);
  std::vector<std::string> kept_in_order;
  for (const auto& ended : outcome.agents)
    if (kept_buckets.contains(ended.bucket)) kept_in_order.push_back(ended.bucket);
  document["kept"] = kept_in_order;
  std::optional<Error> teardown_error;
  if (kept_buckets.size() < manifest.forks.size()) {
    auto done = tear_down_unkept(context, manifest_path, manifest, kept_buckets);
    document["teardown"] = std::move(done.json);
    teardown_error = std::move(done.error);
  } else {
    document["teardown"] = nullptr;
  }
  text += fmt::format("kept {} of {} forks (--keep {}); manifest: {}\n", kept_buckets.size(),
                      outcome.agents.size(), options.keep, manifest_path.string());
  auto result = cli::document(std::move(document), std::move(text));
  result.notice = workflow::agents_summary(outcome);
  result.error = teardown_error ? teardown_error : workflow::exec_error(outcome);
  if (StopSignals::stopped()) result.error = StopSignals::stop_error();
  return result;
}

}  // namespace

namespace fork {

void add_fork_exec(CLI::App& fork, cli::Context& context) {
  auto options = std::make_shared<ExecCommandOptions>();
  auto* command = fork.add_subcommand(
      "exec", "Run a command once per fork, each in its own sandbox with only its fork's key");
  command->footer(
      std::string(k_sandbox_help) +
      "{bucket} and {index} in the command are replaced per agent (one argument each; no\n"
      "shell). Output lines go to stderr prefixed [<fork>] (or to --logs DIR/<fork>.log);\n"
      "stdout gets one row per agent (exit, signal, seconds; objects and bytes with --usage).\n"
      "SIGINT/SIGTERM are forwarded to every agent. Exit 0 when every agent exited 0, 7 when\n"
      "some did not, 130/143 when interrupted; each agent's end is kept in the manifest.\n"
      "--dry-run runs nothing: it prints each agent's fork, command, sandbox and variable names." +
      std::string("\n\n") + command->get_footer());
  command->add_option("--manifest", options->manifest, "The manifest of fork create")->required();
  command->add_option("FORK", options->positionals,
                      "Forks by 1-based index or name (default: every fork with a key); the "
                      "command follows --");
  command->parse_complete_callback([&context] { context.takes_command = true; });
  add_agent_options(*command, options->agents);
  cli::describe(*command, cli::honours::client | cli::honours::dry_run,
                {"tfork fork exec --manifest run.json -- python agent.py --out result.json",
                 "tfork fork exec --manifest run.json 2 -- ./agent.sh"});
  cli::on_run(*command, context, [options, &context] { return run_exec(*options, context); });
}

}  // namespace fork

void register_run(CLI::App& root, cli::Context& context) {
  auto options = std::make_shared<RunOptions>();
  auto* command = root.add_subcommand(
      "run", "fork create + fork exec + teardown of the forks not kept, in one command");
  command->footer(
      std::string(k_sandbox_help) +
      "The manifest stays, so that kept forks can be diffed, merged or torn down later.\n"
      "Ctrl-C (or SIGTERM) at any moment stops the run and tears down what --keep does not\n"
      "keep, then exits 130/143 (--keep-on-interrupt keeps everything for `teardown\n"
      "--manifest`). Exit as fork exec, or the error of fork create or teardown." +
      std::string("\n\n") + command->get_footer());
  command->add_option("SOURCE", options->create.source, "The bucket to fork (snapshot-enabled)")
      ->required();
  command->parse_complete_callback([&context] { context.takes_command = true; });
  add_fork_create_options(*command, options->create, true);
  command
      ->add_option("--keep", options->keep,
                   "Forks kept afterwards: none (default), failed, succeeded, all")
      ->transform(cli::one_of("--keep", {"none", "failed", "succeeded", "all"}));
  command->add_flag("--keep-on-interrupt", options->keep_on_interrupt,
                    "When interrupted, keep every fork and key (default: tear down what --keep "
                    "does not keep)");
  add_agent_options(*command, options->agents);
  cli::describe(*command, cli::honours::client | cli::honours::batch | cli::honours::dry_run,
                {"tfork run training-data -n 4 -- ./agent.sh",
                 "tfork run training-data -n 8 --keep succeeded --usage -- python agent.py",
                 "tfork run training-data -n 2 --keep all --expires-in 1d -- ./agent.sh"});
  cli::on_run(*command, context, [options, &context] { return run_run(*options, context); });
}

}  // namespace tfork::commands
