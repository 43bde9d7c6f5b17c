// SPDX-License-Identifier: Apache-2.0
// tfork teardown (cli.md §5): from manifests, from fork names, or every fork of a source with
// a prefix. The manifest files are left in place (a re-run reads them again and finds
// everything already gone). The workflow lives in tfork/workflow/teardown.
#include "tfork/commands/teardown.hpp"

#include "tfork/cli/context.hpp"
#include "tfork/cli/help.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/workflow/manifest.hpp"
#include "tfork/workflow/teardown.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

namespace tfork::commands {
namespace {

struct TeardownOptions {
  std::vector<std::string> manifests;
  std::vector<std::string> forks;
  std::string source;
  std::string prefix;
  bool allow_non_fork = false;
  bool delete_snapshot = false;
  bool keep_snapshot = false;
  bool recursive = false;
  bool all = false;
  std::string older_than;
  bool expired = false;  // only forks whose expiry (fork create --expires-in) has passed
};

// A manifest records where its forks live: teardown goes there, not to wherever the shell's
// environment happens to point (a run made against a local tfork serve must not be torn
// down against Tigris). --endpoint-url / --iam-endpoint-url still win when given.
void use_manifest_endpoints(const std::vector<workflow::Manifest>& manifests,
                            cli::Context& context) {
  auto pick = [&](auto member, std::string& flag, const char* option) {
    std::string recorded;
    for (const auto& manifest : manifests) {
      const std::string& value = manifest.*member;
      if (value.empty()) continue;
      if (!recorded.empty() && value != recorded)
        usage_error(std::string("the manifests name different endpoints (") + recorded + ", " +
                    value + "): tear them down one at a time");
      recorded = value;
    }
    if (recorded.empty()) return;
    if (flag.empty()) {
      flag = recorded;
    } else if (flag != recorded) {
      spdlog::warn("{} {} differs from the manifest's {}; using {}", option, flag, recorded, flag);
    }
  };
  pick(&workflow::Manifest::endpoint, context.options.config.endpoint_url, "--endpoint-url");
  pick(&workflow::Manifest::iam_endpoint, context.options.config.iam_endpoint_url,
       "--iam-endpoint-url");
}

// The one line a person reads last (issue 26 §1): what went.
std::string teardown_summary(const workflow::TeardownResult& teardown,
                             std::chrono::milliseconds elapsed) {
  using output::Status;
  const auto forks = std::ranges::count_if(teardown.forks, [](const auto& item) {
    return item.status == Status::deleted || item.status == Status::already_gone;
  });
  const auto keys = std::ranges::count_if(teardown.keys, [](const auto& item) {
    return item.status == Status::deleted || item.status == Status::already_gone;
  });
  const auto snapshots = std::ranges::count_if(
      teardown.snapshots, [](const auto& item) { return item.status == Status::deleted; });
  return fmt::format(
      "Tore down {} fork{} and revoked {} key{}{} in {}", forks, forks == 1 ? "" : "s", keys,
      keys == 1 ? "" : "s",
      snapshots > 0 ? fmt::format("; deleted {} snapshot{}", snapshots, snapshots == 1 ? "" : "s")
                    : "",
      output::duration_text(elapsed));
}

cli::CommandResult run(const TeardownOptions& options, cli::Context& context) {
  const int modes = (options.manifests.empty() ? 0 : 1) + (options.forks.empty() ? 0 : 1) +
                    (options.source.empty() ? 0 : 1);
  if (modes != 1)
    usage_error(
        "say what to tear down: --manifest FILE..., fork names, or --source S (--prefix P | "
        "--all | --expired) (exactly one of them)");
  if (options.expired && !options.forks.empty())
    usage_error(
        "--expired goes with --source S or --manifest FILE..., not with fork names (they are "
        "torn down whether or not they expired)");
  if (options.expired && (options.all || !options.prefix.empty()))
    usage_error(
        "--expired chooses the forks of --source by their expiry: not with --all or --prefix");
  if ((!options.prefix.empty() || options.all) && options.source.empty())
    usage_error("--prefix and --all go with --source");
  if (!options.prefix.empty() && options.all) usage_error("give --prefix P or --all, not both");
  if (!options.older_than.empty() && !options.all)
    usage_error("--older-than goes with --source S --all");
  std::optional<std::chrono::seconds> older_than;
  if (!options.older_than.empty()) {
    const auto parsed = workflow::parse_duration(options.older_than);
    if (parsed) older_than = std::chrono::duration_cast<std::chrono::seconds>(*parsed);
    if (!older_than)
      usage_error(
          "--older-than must be a count and a unit from 1s up to 100 years, e.g. 90s, 30m, 12h, "
          "7d or 2w (got '" +
          options.older_than + "')");
  }
  if (options.delete_snapshot && options.manifests.empty())
    usage_error("--delete-snapshot needs --manifest (it names the snapshot)");
  if (options.delete_snapshot && options.keep_snapshot)
    usage_error("--delete-snapshot and --keep-snapshot contradict each other");

  // The one "now" of the run: what --older-than and --expired are measured against.
  const auto now = std::chrono::system_clock::now();
  workflow::TeardownPlan plan;
  std::vector<std::string> unreadable;  // the manifests that could not be read, and why
  if (!options.manifests.empty()) {
    std::vector<workflow::Manifest> manifests;
    std::vector<workflow::ManifestFile> files;
    for (const auto& path : options.manifests) {
      std::error_code missing;
      if (options.manifests.size() > 1 && !std::filesystem::exists(path, missing) &&
          !tigris::bucket_name_problem(path))
        usage_error(fmt::format(
            "'{}' was read as a manifest (--manifest takes every word after it) and there is no "
            "such file; fork names and --manifest do not mix: tear the fork down on its own "
            "(tfork teardown {})",
            output::printable(path), output::printable(path)));
      try {
        manifests.push_back(workflow::read_manifest(path));
        files.push_back({path, manifests.back()});
      } catch (const TforkError& error) {
        // One bad manifest among good ones: the good ones are still torn down (their forks
        // and keys are live), and the bad one is the error of the run (exit 7).
        if (error.error().kind != ErrorKind::usage || options.manifests.size() == 1) throw;
        unreadable.push_back(error.error().message);
      }
    }
    if (manifests.empty())
      throw TforkError(ErrorKind::usage, "InvalidManifest",
                       fmt::format("{}", fmt::join(unreadable, "; ")));
    use_manifest_endpoints(manifests, context);
    if (options.expired) {
      // Only the runs whose expiry has passed; the others are left alone, unread by the service.
      std::erase_if(files, [now](const workflow::ManifestFile& file) {
        const bool expired = workflow::manifest_expired(file.manifest, now);
        if (!expired)
          spdlog::info("{}: not expired{}, left alone", file.path.string(),
                       file.manifest.expires_at
                           ? " (expires " + workflow::expiry_text(*file.manifest.expires_at) + ")"
                           : std::string(" (it records no expiry)"));
        return !expired;
      });
    }
    plan = workflow::plan_from_manifests(std::move(files), options.delete_snapshot,
                                         options.keep_snapshot);
  } else if (!options.forks.empty()) {
    plan = workflow::plan_from_names(options.forks);
  } else {
    cli::require_bucket_name(options.source, "source bucket");
    if (options.prefix.empty() && !options.all && !options.expired)
      usage_error(
          "--source needs --prefix P, --all or --expired: say which of its forks to tear down");
    plan = workflow::plan_from_source(context.client(),
                                      {options.source, options.prefix, options.all, older_than,
                                       options.keep_snapshot, options.expired},
                                      now);
  }
  plan.allow_non_fork = options.allow_non_fork;
  plan.recursive = plan.recursive || options.recursive;
  // A dry run reads (heads, listings) and shows what would go, as `would-delete` rows.
  plan.dry_run = context.options.dry_run;
  if (options.allow_non_fork && !plan.dry_run)
    context.confirm(
        "Also delete the named buckets that are not forks (only empty ones, --allow-non-fork)?");
  const auto started = std::chrono::steady_clock::now();
  const auto teardown = workflow::run_teardown(context.client(), plan, context.batch_settings());
  auto result = cli::document(workflow::to_json(teardown), workflow::to_table(teardown));
  result.error = teardown.error;
  if (!unreadable.empty()) {
    const auto why = fmt::format("{} (the other manifests were {})", fmt::join(unreadable, "; "),
                                 plan.dry_run ? "read" : "torn down");
    if (result.error) {
      result.error->message += "; " + why;
    } else {
      result.error = Error{ErrorKind::partial, "InvalidManifest", why, 0, {}};
    }
    result.error->kind = ErrorKind::partial;
  }
  if (!result.error && !plan.dry_run && context.progress_for_people() && !teardown.forks.empty())
    result.notice =
        teardown_summary(teardown, std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::steady_clock::now() - started));
  // Some items refused (403) among others: say which identity and endpoint were refused,
  // the usual cause being an agent's key or another account's (an all-403 teardown is an
  // auth error, which cli::run explains the same way).
  const auto denied = [](const std::optional<Error>& error) {
    return error && error->kind == ErrorKind::auth;
  };
  bool any_denied = std::ranges::any_of(teardown.forks, [&](auto& i) { return denied(i.error); }) ||
                    std::ranges::any_of(teardown.keys, [&](auto& i) { return denied(i.error); });
  if (any_denied && result.error && result.error->kind != ErrorKind::auth)
    result.error->message += "; access was denied (" + context.identity_hint() + ")";
  return result;
}

}  // namespace

void register_teardown(CLI::App& root, cli::Context& context) {
  auto options = std::make_shared<TeardownOptions>();
  auto* command = root.add_subcommand(
      "teardown",
      "Revoke each fork's key and delete the fork (children first); only forks are deleted");
  command->footer(
      "With --manifest, forks made from the run's forks are part of the run (children first).\n"
      "--dry-run reads what a teardown reads (HeadBucket, the fork and key listings) and shows\n"
      "a would-delete row per fork, key and snapshot; nothing is deleted or rewritten." +
      std::string("\n\n") + command->get_footer());
  command->add_option("FORK", options->forks, "Fork buckets to tear down");
  command
      ->add_option("--manifest", options->manifests,
                   "Manifests of fork create: their forks and keys, at the endpoints they record "
                   "(left in place; a re-run is harmless)")
      ->type_name("FILE");
  command->add_option("--source", options->source, "Tear down the forks of this bucket ...")
      ->type_name("BUCKET");
  command->add_option("--prefix", options->prefix,
                      "... named PREFIX-N, as fork create --prefix PREFIX names them");
  command->add_flag("--all", options->all, "... all of them (clean-up after crashed jobs)");
  command->add_flag("--expired", options->expired,
                    "Only forks whose expiry (fork create --expires-in) has passed: with --source, "
                    "read from the service (the name of each fork's snapshot), their forks going "
                    "with them, children first; with --manifest, the runs whose expires_at has "
                    "passed. Nothing expired is success with an empty list");
  command
      ->add_option("--older-than", options->older_than,
                   "With --all: only forks created more than DURATION ago (90s, 30m, 12h, "
                   "7d, 2w)")
      ->type_name("DURATION");
  command->add_flag("--recursive", options->recursive,
                    "Also tear down the forks of these forks (found through the fork listing), "
                    "children first; without it a fork that has forks is left in place, its "
                    "keys revoked (--manifest always includes them: they are part of the run)");
  command->add_flag("--allow-non-fork", options->allow_non_fork,
                    "Also delete named buckets that are not forks, when empty (no objects, "
                    "snapshots or forks); asks on a terminal, needs --yes elsewhere");
  command->add_flag("--keep-snapshot", options->keep_snapshot,
                    "Keep the snapshot the run took (default: deleted with the run's last fork "
                    "when no other fork uses it)");
  command->add_flag("--delete-snapshot", options->delete_snapshot,
                    "Also delete a snapshot the run was given (--snapshot), after the forks");
  cli::describe(
      *command,
      cli::honours::client | cli::honours::batch | cli::honours::confirm | cli::honours::dry_run,
      {"tfork teardown --manifest run.json",
       "tfork teardown --source training-data --all --older-than 1d --yes",
       "tfork teardown --source training-data --expired"});
  cli::on_run(*command, context, [options, &context] { return run(*options, context); });
}

}  // namespace tfork::commands
