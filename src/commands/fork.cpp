// SPDX-License-Identifier: Apache-2.0
// tfork fork create | env (cli.md §2, §4), and the `fork` group that also holds `fork head`
// and `fork ls` (fork_inspect.cpp). The workflow lives in tfork/workflow; this file parses
// options, calls it and renders.
#include "tfork/commands/fork.hpp"

#include "tfork/cli/context.hpp"
#include "tfork/cli/help.hpp"
#include "tfork/cli/values.hpp"
#include "tfork/commands/fork_create_options.hpp"
#include "tfork/output/progress.hpp"
#include "tfork/workflow/agent_env.hpp"
#include "tfork/workflow/fork_batch.hpp"
#include "tfork/workflow/manifest.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace tfork::commands {
namespace {

// A path as it would be typed into a shell: quoted only when it has to be.
std::string shell_word(const std::string& text) {
  const bool plain = !text.empty() && std::ranges::all_of(text, [](unsigned char c) {
    return std::isalnum(c) || c == '.' || c == '_' || c == '/' || c == '-' || c == '+';
  });
  return plain ? text : output::shell_quote(text);
}

// How to tear down forks without a manifest: "--source S --prefix P" for P-1…P-N, else the
// names.
std::string teardown_words(const workflow::ForkCreatePlan& plan) {
  const auto& first = plan.names.front();
  const auto dash = first.rfind('-');
  const auto prefix = dash == std::string::npos ? std::string() : first.substr(0, dash);
  const bool numbered = !prefix.empty() && std::ranges::all_of(plan.names, [&](const auto& name) {
    return name.size() > prefix.size() + 1 && name.starts_with(prefix + "-") &&
           std::ranges::all_of(name.substr(prefix.size() + 1),
                               [](unsigned char c) { return std::isdigit(c); });
  });
  if (numbered && plan.names.size() > 3)
    return fmt::format("--source {} --prefix {}", plan.source, prefix);
  return fmt::format("{}", fmt::join(plan.names, " "));
}

// The one line a person reads last (issue 26 §1): what was made, where its record is, and the
// next commands.
std::string create_summary(const workflow::ForkCreatePlan& plan,
                           std::chrono::milliseconds elapsed) {
  const auto own = plan.names.size();
  const auto line =
      fmt::format("Created {} fork{} of {}{} in {}", own, own == 1 ? "" : "s", plan.source,
                  plan.role ? fmt::format(" with {} keys", iam::role_name(*plan.role)) : "",
                  output::duration_text(elapsed));
  if (!plan.manifest_path)
    return fmt::format("{}. When done: tfork teardown {}", line, teardown_words(plan));
  const auto manifest = shell_word(plan.manifest_path->string());
  return fmt::format(
      "{}; manifest {}. Next: tfork fork exec --manifest {} -- COMMAND; when done: tfork "
      "teardown --manifest {}",
      line, manifest, manifest, manifest);
}

cli::CommandResult run_create(const ForkCreateOptions& options, cli::Context& context) {
  // `fork create ds1 100` most likely meant -n 100 (issue 26 §3): a fork named by digits alone
  // is asked for on a terminal, and needs --yes elsewhere.
  for (const auto& name : options.names)
    if (std::ranges::all_of(name, [](unsigned char c) { return std::isdigit(c); }))
      context.confirm(
          fmt::format("Create one fork named '{}'? (for {} forks: tfork fork create {} "
                      "-n {})",
                      name, name, options.source, name));
  const auto clock = now_ms();
  auto plan = plan_fork_create(options, clock);
  // The manifest is this run's until it ends; what it holds is read again once claimed.
  std::optional<workflow::ManifestClaim> claim;
  if (plan.manifest_path && !context.options.dry_run) {
    claim.emplace(*plan.manifest_path);
    plan = plan_fork_create(options, clock);
  }
  if (plan.manifest_defaulted && !context.options.dry_run) {
    // cli.md §4.4: the keys' secrets are only ever in this file.
    spdlog::warn(
        "the keys' secrets go to the manifest {} (mode 0600; --manifest FILE chooses "
        "another)",
        plan.manifest_path->string());
  }

  if (context.options.dry_run) return context.dry_run(workflow::fork_create_operations(plan));
  const auto started = std::chrono::steady_clock::now();
  auto outcome = workflow::run_fork_create(context.client(), plan, context.batch_settings());
  // Where the record is (issue 26 §2): scripts read the path instead of guessing the name;
  // null when there is none (no keys, or nothing was made under the default name).
  auto json = workflow::to_json(outcome.manifest);
  json["manifest"] =
      outcome.manifest_kept ? output::Json(plan.manifest_path->string()) : output::Json();
  auto result = cli::document(std::move(json), workflow::to_table(outcome.manifest));
  result.error = std::move(outcome.error);
  if (!result.error && context.progress_for_people())
    result.notice = create_summary(plan, std::chrono::duration_cast<std::chrono::milliseconds>(
                                             std::chrono::steady_clock::now() - started));
  return result;
}

void add_fork_create(CLI::App& fork, cli::Context& context) {
  auto options = std::make_shared<ForkCreateOptions>();
  auto* command = fork.add_subcommand(
      "create",
      "Snapshot SOURCE once, then create N forks of it and one scoped access key per fork");
  command->add_option("SOURCE", options->source, "The bucket to fork (snapshot-enabled)")
      ->required();
  command->add_option("NAME", options->names, "Fork names (instead of -n N)");
  add_fork_create_options(*command, *options, false);
  command->add_flag("--keep-partial", options->keep_partial,
                    "On failure keep what was created and exit 7 (default: roll back)");
  command->add_flag("--exist-ok", options->exist_ok,
                    "Adopt a fork that already exists as a fork of SOURCE from the same "
                    "snapshot, and an existing manifest of SOURCE (the keys it records are "
                    "reused)");
  command
      ->add_option("--add", options->add,
                   "Grow the run of --manifest FILE by K forks, numbered on from its last, "
                   "from its snapshot, each with its key")
      ->type_name("K")
      ->check(cli::whole_number("--add", 1, workflow::k_max_forks));
  cli::describe(
      *command,
      cli::honours::client | cli::honours::batch | cli::honours::confirm | cli::honours::dry_run,
      {"tfork fork create training-data -n 8 --manifest run.json",
       "tfork fork create training-data alice bob --keys readonly",
       "tfork fork create training-data -n 4 --prefix nightly --expires-in 12h"});
  cli::on_run(*command, context, [options, &context] { return run_create(*options, context); });
}

struct EnvOptions {
  std::string manifest;
  std::string selector;
  std::string format;  // "" : by --output (json) or env
};

// One agent's environment, in the format asked for (the document with --output json).
cli::CommandResult run_env(const EnvOptions& options) {
  const auto manifest = workflow::read_manifest(options.manifest);
  const auto env = workflow::agent_env(manifest, options.selector);
  cli::CommandResult result;
  if (options.format == "dotenv") {
    result.text = workflow::to_dotenv(env);
  } else if (options.format == "json") {
    result.text = workflow::to_json(env).dump(2) + "\n";
  } else if (options.format == "env") {
    result.text = workflow::to_shell(env);
  } else if (options.format == "fish") {
    result.text = workflow::to_fish(env);
  } else if (options.format == "k8s-secret") {
    result.text = workflow::to_k8s_secret(env);
  } else if (options.format == "github") {
    // Appended to the file GitHub Actions names (the variables reach the later steps); the
    // masks go to stdout, where the runner reads workflow commands.
    const char* github_env = std::getenv("GITHUB_ENV");
    if (github_env == nullptr || *github_env == '\0')
      throw TforkError(ErrorKind::usage, "UsageError",
                       "--format github appends to the file $GITHUB_ENV names, and GITHUB_ENV "
                       "is not set (GitHub Actions sets it in every step)");
    const auto github = workflow::to_github(env);
    // It holds the secret: a file made here is the owner's alone (0600), as a manifest is.
    const int fd = ::open(github_env, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    std::FILE* file = fd < 0 ? nullptr : ::fdopen(fd, "a");
    if (file == nullptr && fd >= 0) ::close(fd);
    if (file == nullptr)
      throw TforkError(
          ErrorKind::other, "IoError",
          fmt::format("cannot append to $GITHUB_ENV ({}): {}", github_env, std::strerror(errno)));
    const bool written = std::fwrite(github.env_file.data(), 1, github.env_file.size(), file) ==
                         github.env_file.size();
    if (std::fclose(file) != 0 || !written)
      throw TforkError(ErrorKind::other, "IoError",
                       fmt::format("cannot append to $GITHUB_ENV ({})", github_env));
    result.text = github.masks;
  } else {
    result = cli::document(workflow::to_json(env), workflow::to_shell(env));
  }
  return result;
}

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
  command
      ->add_option("FORK", options->selector,
                   "The fork: its 1-based index in the manifest, or its name")
      ->required();
  command
      ->add_option("--format", options->format,
                   "env (export/unset lines, the default), dotenv, json, fish, k8s-secret (a "
                   "Kubernetes Secret) or github (appends to $GITHUB_ENV, prints ::add-mask:: "
                   "for the secret)")
      ->transform(
          cli::one_of("--format", {"env", "dotenv", "json", "fish", "k8s-secret", "github"}));
  cli::describe(*command, 0,
                {"( eval \"$(tfork fork env --manifest run.json 3)\"; ./agent.sh )",
                 "tfork fork env --manifest run.json run-1 --format dotenv > agent.env",
                 "tfork fork env --manifest run.json 1 --format github"});
  cli::on_run(*command, context, [options] { return run_env(*options); });
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
