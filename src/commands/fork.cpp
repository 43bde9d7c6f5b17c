// SPDX-License-Identifier: Apache-2.0
// tfork fork create | env (cli.md §2, §4), and the `fork` group that also holds `fork head`
// and `fork ls` (fork_inspect.cpp). The workflow lives in tfork/workflow; this file parses
// options, calls it and renders.
#include "tfork/commands/fork.hpp"

#include "tfork/cli/context.hpp"
#include "tfork/cli/values.hpp"
#include "tfork/commands/fork_create_options.hpp"
#include "tfork/workflow/agent_env.hpp"
#include "tfork/workflow/fork_batch.hpp"
#include "tfork/workflow/manifest.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace tfork::commands {
namespace {

cli::CommandResult run_create(const ForkCreateOptions& options, cli::Context& context) {
  auto plan = plan_fork_create(options, context);
  if (plan.manifest_defaulted && !context.options.dry_run) {
    // cli.md §4.4: the keys' secrets are only ever in this file.
    spdlog::warn(
        "the keys' secrets go to the manifest {} (mode 0600; --manifest FILE chooses "
        "another)",
        plan.manifest_path->string());
  }

  if (context.options.dry_run) return context.dry_run(workflow::fork_create_operations(plan));
  auto outcome = workflow::run_fork_create(context.client(), plan, cli::interrupted());
  auto result =
      cli::document(workflow::to_json(outcome.manifest), workflow::to_table(outcome.manifest));
  if (outcome.exit_code == 0) return result;
  if (outcome.exit_code == exit_code(ErrorKind::partial)) {
    const auto failed = std::ranges::count_if(
        outcome.manifest.forks, [](const auto& fork) { return fork.error.has_value(); });
    Error error = outcome.error.value_or(Error{});
    error.message =
        fmt::format("{} of {} forks failed (kept the others: --keep-partial); first: {}", failed,
                    outcome.manifest.forks.size(), error.message);
    error.kind = ErrorKind::partial;
    error.code = "PartialFailure";
    result.error = std::move(error);
    return result;
  }
  result.error =
      outcome.error.value_or(Error{ErrorKind::other, "Failed", "fork create failed", 0, {}});
  return result;
}

void add_fork_create(CLI::App& fork, cli::Context& context) {
  auto options = std::make_shared<ForkCreateOptions>();
  auto* command = fork.add_subcommand(
      "create",
      "Snapshot SOURCE once, then create N forks of it and one scoped access key per fork");
  command->add_option("source", options->source, "The bucket to fork (snapshot-enabled)")
      ->required();
  command->add_option("names", options->names, "Fork names (instead of -n N)");
  add_fork_create_options(*command, *options, false);
  command->add_flag("--keep-partial", options->keep_partial,
                    "On failure keep what was created and exit 7 (default: roll back)");
  command->add_flag("--exist-ok", options->exist_ok,
                    "Adopt a fork that already exists as a fork of SOURCE from the same "
                    "snapshot (mints a new key), and an existing manifest of SOURCE");
  cli::on_run(*command, context, [options, &context] { return run_create(*options, context); });
}

struct EnvOptions {
  std::string manifest;
  std::string selector;
  std::string format;  // "" : by --output (json) or env
};

void add_fork_env(CLI::App& fork, cli::Context& context) {
  auto options = std::make_shared<EnvOptions>();
  auto* command = fork.add_subcommand(
      "env",
      "Print one agent's whole environment: its fork, key and endpoints, and the "
      "credential sources it must not see");
  command->footer(
      "Sets every variable the AWS tools, the Tigris SDKs and the Tigris CLI read, points\n"
      "AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE at /dev/null and unsets every other\n"
      "credential source. Use it in a subshell, never in the operator's own shell:\n"
      "  ( eval \"$(tfork fork env --manifest run.json 3)\"; ./agent.sh )\n"
      "or let `tfork fork exec` do it. Exit 3 for a fork the manifest does not record as live." +
      std::string("\n\n") + command->get_footer());
  command->add_option("--manifest", options->manifest, "The manifest of fork create")->required();
  command->add_option("fork", options->selector, "1-based index or bucket name")->required();
  command
      ->add_option("--format", options->format,
                   "env (export/unset lines, the default), dotenv, or json")
      ->check(cli::one_of("--format", {"env", "dotenv", "json"}));
  cli::on_run(*command, context, [options, &context] {
    const auto manifest = workflow::read_manifest(options->manifest);
    const auto env = workflow::agent_env(manifest, options->selector);
    if (options->format == "dotenv") {
      cli::CommandResult result;
      result.text = workflow::to_dotenv(env);
      return result;
    }
    if (options->format == "json") {
      cli::CommandResult result;
      result.text = workflow::to_json(env).dump(2) + "\n";
      return result;
    }
    if (options->format == "env") {
      cli::CommandResult result;
      result.text = workflow::to_shell(env);
      return result;
    }
    return cli::document(workflow::to_json(env), workflow::to_shell(env));
  });
}

}  // namespace

void register_fork(CLI::App& root, cli::Context& context) {
  auto* group = root.add_subcommand("fork", "Create, inspect and use forks of a bucket");
  group->require_subcommand(1);
  add_fork_create(*group, context);
  add_fork_env(*group, context);
  fork::add_fork_exec(*group, context);
  fork::add_fork_after(*group, context);
  fork::add_fork_head(*group, context);
  fork::add_fork_ls(*group, context);
}

}  // namespace tfork::commands
