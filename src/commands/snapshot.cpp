// SPDX-License-Identifier: Apache-2.0
// tfork snapshot take | ls | rm (cli.md §2, §6; tigris-wire.md §1.4, §2.3–2.5).
#include "tfork/commands/snapshot.hpp"

#include "tfork/cli/context.hpp"
#include "tfork/cli/help.hpp"
#include "tfork/cli/values.hpp"
#include "tfork/core/error.hpp"
#include "tfork/output/render.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/tigris/paging.hpp"
#include "tfork/workflow/batch.hpp"
#include "tfork/workflow/duration.hpp"
#include "tfork/workflow/send_once.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tfork::commands::snapshot {
namespace {

// Versions are ns decimals of up to 19 digits (tigris-wire.md §1.4), so the longer string
// is the later one and equal lengths compare as text.
bool newer(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() > b.size() : a > b;
}

}  // namespace

// ---- snapshot take

void check(const TakeOptions& options) {
  cli::require_bucket_name(options.bucket);
  if (options.name) {
    if (auto problem = tigris::snapshot_name_problem(*options.name))
      usage_error("invalid snapshot name: " + *problem);
  }
}

TakeResult run_snapshot_take(tigris::Client& client, const TakeOptions& options) {
  const auto operation = tigris::take_snapshot(options.bucket, options.name);
  const auto answer = workflow::send_take_snapshot(client, options.bucket, options.name);
  if (auto error = tigris::error_from_result(answer, operation.name)) {
    // A 400 here is most often a regular bucket: say how to turn snapshots on (issue 26 §3).
    if (error->http_status == 400)
      error->message +=
          "; if snapshots are off: tfork bucket set " + options.bucket + " --snapshots on";
    throw TforkError(std::move(*error));
  }
  const auto& response = *answer;
  auto version = tigris::parse_snapshot_version(response);
  if (!version) {
    throw TforkError(Error{ErrorKind::other,
                           "InvalidResponse",
                           "CreateBucketSnapshot succeeded without an X-Tigris-Snapshot-Version "
                           "header; is snapshots enabled on '" +
                               options.bucket + "' and is the endpoint Tigris?",
                           response.status,
                           {}});
  }
  return {options.bucket, std::move(*version), options.name};
}

output::Json to_json(const TakeResult& result) {
  return output::Json{{"bucket", result.bucket},
                      {"version", result.version},
                      {"name", result.name ? output::Json(*result.name) : output::Json()}};
}

// Only the version, so that `v=$(tfork snapshot take b)` works.
std::string to_table(const TakeResult& result) {
  return result.version + "\n";
}

// ---- snapshot ls

ForkCounts count_forks(tigris::Client& client, const std::string& bucket) {
  ForkCounts counts;
  for (const auto& fork : tigris::find_forks(client, bucket))
    if (!fork.snapshot.empty()) ++counts[fork.snapshot];
  return counts;
}

namespace {

std::vector<tigris::Snapshot> newest_first(std::vector<tigris::Snapshot> snapshots) {
  std::ranges::stable_sort(
      snapshots, [](const auto& a, const auto& b) { return newer(a.version, b.version); });
  return snapshots;
}

output::Json count_json(const std::optional<int>& count) {
  return count ? output::Json(*count) : output::Json();
}

std::string count_cell(const std::optional<int>& count) {
  return count ? std::to_string(*count) : std::string("-");
}

std::optional<int> count_of(const std::optional<ForkCounts>& counts, const std::string& version) {
  if (!counts) return std::nullopt;
  const auto it = counts->find(version);
  return it == counts->end() ? 0 : it->second;
}

}  // namespace

ListResult run_snapshot_ls(tigris::Client& client, const ListOptions& options) {
  ListResult result{options.bucket,
                    newest_first(tigris::list_all_snapshots(client, options.bucket, options.limit)),
                    std::nullopt};
  if (options.limit > 0 && static_cast<int>(result.snapshots.size()) > options.limit)
    result.snapshots.resize(static_cast<std::size_t>(options.limit));
  if (result.snapshots.empty()) return result;
  try {
    result.forks = count_forks(client, options.bucket);
  } catch (const TforkError& failure) {
    spdlog::warn("could not list the forks of {} to count them per snapshot: {}",
                 output::printable(options.bucket), failure.what());
  }
  return result;
}

output::Json to_json(const ListResult& result) {
  output::Json snapshots = output::Json::array();
  for (const auto& snapshot : result.snapshots) {
    snapshots.push_back(
        output::Json{{"version", snapshot.version},
                     {"name", snapshot.name ? output::Json(*snapshot.name) : output::Json()},
                     {"created", output::json_time(snapshot.created)},
                     {"forks", count_json(count_of(result.forks, snapshot.version))}});
  }
  return output::Json{{"bucket", result.bucket}, {"snapshots", std::move(snapshots)}};
}

std::string to_table(const ListResult& result) {
  output::Table table({"VERSION", "NAME", "CREATED", "FORKS"});
  for (const auto& snapshot : result.snapshots) {
    table.row({snapshot.version, output::cell_or_dash(snapshot.name.value_or("")),
               output::table_time(snapshot.created),
               count_cell(count_of(result.forks, snapshot.version))});
  }
  return table.render();
}

// ---- snapshot rm

void check(const RemoveOptions& options) {
  cli::require_bucket_name(options.bucket);
  for (const auto& version : options.versions) {
    if (!tigris::is_snapshot_version(version)) {
      usage_error("invalid snapshot version '" + version +
                  "': a version is a decimal Unix time in nanoseconds, e.g. "
                  "1751631910196672425 (see tfork snapshot ls)");
    }
  }
}

namespace {

// A gateway that refuses the delete of a gone version with some other 4xx: the listing
// decides, and a version it does not hold was never there, as NoSuchSnapshot says.
void settle_unclear_refusals(tigris::Client& client, const std::string& bucket,
                             std::vector<RemoveItem>& versions) {
  std::vector<std::string> unclear;
  for (const auto& item : versions)
    if (item.outcome.status == output::Status::failed && item.outcome.error &&
        tigris::snapshot_refusal_unclear(*item.outcome.error))
      unclear.push_back(item.version);
  if (unclear.empty()) return;
  std::vector<std::string> absent;
  try {
    absent = tigris::snapshots_absent(client, bucket, unclear);
  } catch (const TforkError& failure) {
    spdlog::warn("could not list the snapshots of {} to check the refused deletes: {}",
                 output::printable(bucket), failure.what());
    return;
  }
  for (auto& item : versions)
    if (std::ranges::find(absent, item.version) != absent.end())
      item.outcome = {output::Status::not_found, std::nullopt};
}

}  // namespace

RemoveResult run_snapshot_rm(tigris::Client& client, const RemoveOptions& options,
                             const workflow::BatchSettings& settings) {
  using output::Status;
  std::vector<tigris::Operation> operations;
  for (const auto& version : options.versions)
    operations.push_back(tigris::delete_snapshot(options.bucket, version));
  RemoveResult result{options.bucket, {}};
  workflow::BatchRunner runner(client, settings);
  auto phase = runner.phase("snapshots", operations.size());
  const auto items = runner.run(
      &phase, std::move(operations),
      [](std::size_t, const http::Result& answer) {
        if (auto error = tigris::error_from_result(answer, "DeleteBucketSnapshot")) {
          // Only an unknown snapshot is "not found"; a missing bucket is a failure (exit 3).
          if (snapshot_gone(*error)) return workflow::Verdict::done(Status::not_found);
          return workflow::Verdict::done(Status::failed, std::move(*error));
        }
        return workflow::Verdict::done(Status::deleted);
      },
      options.versions);
  for (std::size_t i = 0; i < items.size(); ++i)
    result.versions.push_back(
        {options.versions[i],
         items[i].decided ? items[i].outcome
                          : output::ItemStatus{Status::failed, workflow::interrupted_error()}});
  settle_unclear_refusals(client, options.bucket, result.versions);
  return result;
}

output::Json to_json(const RemoveResult& result) {
  output::Json versions = output::Json::array();
  for (const auto& item : result.versions)
    versions.push_back(output::item_json(output::Json{{"version", item.version}}, item.outcome));
  return output::Json{{"bucket", result.bucket}, {"versions", std::move(versions)}};
}

std::string to_table(const RemoveResult& result) {
  output::Table table({"VERSION", "STATUS", "ERROR"});
  for (const auto& item : result.versions)
    table.row({item.version, output::status_cell(item.outcome.status),
               output::item_error_text(item.outcome)});
  return table.render();
}

// The batch exit rule of cli.md §6 (workflow::batch_error).
std::optional<Error> batch_error(const RemoveResult& result) {
  workflow::BatchTally tally;
  tally.total = result.versions.size();
  for (const auto& item : result.versions) {
    if (item.outcome.status == output::Status::failed)
      tally.failures.push_back(&*item.outcome.error);
    if (item.outcome.status == output::Status::not_found) tally.missing.push_back(item.version);
  }
  return workflow::batch_error(
      tally, {"snapshots", fmt::format("snapshot of {}", result.bucket), "could not be deleted"});
}

// ---- snapshot prune

void check(const PruneOptions& options) {
  cli::require_bucket_name(options.bucket);
  if (options.keep_last && options.older_than)
    usage_error("--keep-last and --older-than do not go together: prune by one rule at a time");
  if (!options.keep_last && !options.older_than)
    usage_error("say which snapshots to prune: --keep-last N or --older-than DURATION");
  if (options.keep_last && *options.keep_last < 0) usage_error("--keep-last must be 0 or more");
}

namespace {

// When a snapshot was taken: its CreationDate, else its version (ns since 1970, tigris-wire
// §1.4); nullopt when neither can be read (such a snapshot is never taken for an old one).
std::optional<std::int64_t> taken_ns(const tigris::Snapshot& snapshot) {
  if (auto ns = output::unix_ns(snapshot.created)) return ns;
  return tigris::version_ns(snapshot.version);
}

}  // namespace

PruneResult run_snapshot_prune(tigris::Client& client, const PruneOptions& options,
                               std::chrono::system_clock::time_point now, bool dry_run,
                               const workflow::BatchSettings& settings) {
  const auto snapshots = newest_first(tigris::list_all_snapshots(client, options.bucket));
  std::vector<tigris::Snapshot> selected;
  if (options.keep_last) {
    const auto keep = static_cast<std::size_t>(*options.keep_last);
    if (snapshots.size() > keep) selected.assign(snapshots.begin() + keep, snapshots.end());
  } else {
    const auto cutoff =
        std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() -
        std::chrono::duration_cast<std::chrono::nanoseconds>(*options.older_than).count();
    for (const auto& snapshot : snapshots) {
      const auto taken = taken_ns(snapshot);
      if (taken && *taken < cutoff) selected.push_back(snapshot);
    }
  }
  PruneResult result{options.bucket, dry_run, {}};
  if (selected.empty()) return result;

  // With --unused the fork listing decides what is safe: without it, nothing is deleted.
  // Without --unused the counts are only shown, so a failed listing is a warning.
  std::optional<ForkCounts> forks;
  if (options.unused) {
    forks = count_forks(client, options.bucket);
  } else {
    try {
      forks = count_forks(client, options.bucket);
    } catch (const TforkError& failure) {
      spdlog::warn("could not list the forks of {}: {}", output::printable(options.bucket),
                   failure.what());
    }
  }

  // "Unused" is read from a fork listing, which may miss forks made a moment ago.
  if (options.unused)
    if (auto warning = tigris::listing_lag_warning(options.bucket, snapshots, now))
      spdlog::warn("{}", *warning);

  RemoveOptions deletes{options.bucket, {}};
  std::vector<std::size_t> deleted_at;  // the item of each delete
  for (auto& snapshot : selected) {
    PruneItem item{snapshot, count_of(forks, snapshot.version), {}};
    if (options.unused && item.forks.value_or(0) > 0) {
      item.outcome.status = output::Status::kept;
    } else {
      item.outcome.status = dry_run ? output::Status::would_delete : output::Status::deleted;
      deleted_at.push_back(result.snapshots.size());
      deletes.versions.push_back(snapshot.version);
    }
    result.snapshots.push_back(std::move(item));
  }
  if (dry_run || deletes.versions.empty()) return result;
  auto removed = run_snapshot_rm(client, deletes, settings);
  for (std::size_t i = 0; i < removed.versions.size(); ++i)
    result.snapshots[deleted_at[i]].outcome = std::move(removed.versions[i].outcome);
  return result;
}

output::Json to_json(const PruneResult& result) {
  output::Json snapshots = output::Json::array();
  for (const auto& item : result.snapshots) {
    const auto& snapshot = item.snapshot;
    snapshots.push_back(output::item_json(
        output::Json{{"version", snapshot.version},
                     {"name", snapshot.name ? output::Json(*snapshot.name) : output::Json()},
                     {"created", output::json_time(snapshot.created)},
                     {"forks", count_json(item.forks)}},
        item.outcome));
  }
  return output::Json{
      {"bucket", result.bucket}, {"dry_run", result.dry_run}, {"snapshots", std::move(snapshots)}};
}

std::string to_table(const PruneResult& result) {
  output::Table table({"VERSION", "NAME", "CREATED", "FORKS", "STATUS", "ERROR"});
  for (const auto& item : result.snapshots) {
    const auto& snapshot = item.snapshot;
    auto status = output::status_cell(item.outcome.status);
    if (item.outcome.status == output::Status::kept) status = "kept (forks use it)";
    table.row({snapshot.version, output::cell_or_dash(snapshot.name.value_or("")),
               output::table_time(snapshot.created), count_cell(item.forks), status,
               output::item_error_text(item.outcome)});
  }
  return table.render();
}

std::optional<Error> batch_error(const PruneResult& result) {
  workflow::BatchTally tally;
  for (const auto& item : result.snapshots) {
    if (item.outcome.status == output::Status::kept ||
        item.outcome.status == output::Status::would_delete)
      continue;
    ++tally.total;
    if (item.outcome.status == output::Status::failed)
      tally.failures.push_back(&*item.outcome.error);
  }
  return workflow::batch_error(tally, {"snapshots", "snapshot", "could not be deleted"});
}

}  // namespace tfork::commands::snapshot

namespace tfork::commands::snapshot {

cli::CommandResult run_snapshot_take(const TakeOptions& options, cli::Context& context) {
  check(options);
  if (context.options.dry_run) {
    const tigris::Operation ops[] = {tigris::take_snapshot(options.bucket, options.name)};
    return context.dry_run(ops);
  }
  const auto result = run_snapshot_take(context.client(), options);
  return cli::document(to_json(result), to_table(result));
}

cli::CommandResult run_snapshot_ls(const ListOptions& options, cli::Context& context) {
  cli::require_bucket_name(options.bucket);
  const auto result = run_snapshot_ls(context.client(), options);
  auto outcome = cli::document(to_json(result), to_table(result));
  if (result.snapshots.empty()) outcome.notice = "No snapshots of bucket " + result.bucket + ".";
  return outcome;
}

cli::CommandResult run_snapshot_prune(const PruneArguments& arguments, cli::Context& context) {
  PruneOptions options = arguments.options;
  options.keep_last = arguments.keep_last;
  if (!arguments.older_than.empty()) {
    options.older_than = workflow::parse_duration(arguments.older_than);
    if (!options.older_than)
      usage_error("--older-than must be a count and a unit, e.g. 90s, 30m, 12h, 7d (got '" +
                  arguments.older_than + "')");
  }
  check(options);
  const auto result =
      run_snapshot_prune(context.client(), options, std::chrono::system_clock::now(),
                         context.options.dry_run, context.batch_settings());
  auto outcome = cli::document(to_json(result), to_table(result));
  if (result.snapshots.empty())
    outcome.notice = "Nothing to prune: no snapshot of " + result.bucket + " matches.";
  else if (result.dry_run)
    outcome.notice = "Dry run: nothing was deleted.";
  outcome.error = batch_error(result);
  return outcome;
}

cli::CommandResult run_snapshot_rm(RemoveOptions options, cli::Context& context) {
  check(options);
  std::vector<std::string> unique;
  for (const auto& version : options.versions)
    if (std::ranges::find(unique, version) == unique.end()) unique.push_back(version);
  options.versions = std::move(unique);
  if (context.options.dry_run) {
    std::vector<tigris::Operation> ops;
    for (const auto& version : options.versions)
      ops.push_back(tigris::delete_snapshot(options.bucket, version));
    return context.dry_run(ops);
  }
  // A snapshot forks were made from is what those forks' source looked like when they began
  // (fork diff and merge compare against it): deleting it asks, as prune --unused keeps it.
  if (!context.options.yes) {
    std::vector<std::string> used;
    std::optional<std::string> unknown;  // why the forks could not be counted
    try {
      const auto forks = count_forks(context.client(), options.bucket);
      for (const auto& version : options.versions)
        if (const auto n = count_of(forks, version).value_or(0); n > 0)
          used.push_back(fmt::format("{} ({} fork{})", version, n, n == 1 ? "" : "s"));
    } catch (const TforkError& failure) {
      // A missing bucket is the delete's own answer (each version fails, exit 3); anything
      // else leaves the question open.
      if (failure.error().kind == ErrorKind::interrupted) throw;
      if (failure.error().kind != ErrorKind::not_found) unknown = failure.what();
    }
    if (!used.empty())
      context.confirm(fmt::format(
          "Forks of {} were made from {}; without it, fork diff and fork merge cannot compare "
          "them with where they began. Delete anyway?",
          output::printable(options.bucket), fmt::join(used, ", ")));
    if (unknown)
      context.confirm(
          fmt::format("Could not list the forks of {} ({}), so whether forks were "
                      "made from these snapshots is not known. Delete anyway?",
                      output::printable(options.bucket), *unknown));
  }
  const auto result = run_snapshot_rm(context.client(), options, context.batch_settings());
  auto outcome = cli::document(to_json(result), to_table(result));
  outcome.error = batch_error(result);
  return outcome;
}

}  // namespace tfork::commands::snapshot

namespace tfork::commands {

using namespace snapshot;

void register_snapshot(CLI::App& root, cli::Context& context) {
  auto* snapshot = root.add_subcommand("snapshot", "Take, list and delete bucket snapshots");
  snapshot->require_subcommand(1);

  auto take_options = std::make_shared<TakeOptions>();
  auto* take = snapshot->add_subcommand(
      "take", "Snapshot a bucket (CreateBucketSnapshot) and print the version");
  take->add_option("BUCKET", take_options->bucket, "Bucket to snapshot")->required();
  take->add_option(
      "--name", take_options->name,
      "Snapshot name: 1-255 characters of printable ASCII, no ';', no space at either end");
  cli::describe(*take, cli::honours::client | cli::honours::dry_run,
                {"v=$(tfork snapshot take training-data --name baseline)"});
  cli::on_run(*take, context,
              [&context, take_options] { return run_snapshot_take(*take_options, context); });

  auto ls_options = std::make_shared<ListOptions>();
  auto* ls = snapshot->add_subcommand(
      "ls", "List a bucket's snapshots, newest first (ListBucketSnapshots)");
  ls->add_option("BUCKET", ls_options->bucket, "Bucket whose snapshots to list")->required();
  ls->add_option("--limit", ls_options->limit, "List at most N snapshots (the newest)")
      ->check(cli::whole_number("--limit", 1, 1'000'000));
  cli::describe(*ls, cli::honours::client, {"tfork snapshot ls training-data --limit 10"});
  cli::on_run(*ls, context,
              [&context, ls_options] { return run_snapshot_ls(*ls_options, context); });

  auto prune_args = std::make_shared<PruneArguments>();
  auto* prune = snapshot->add_subcommand(
      "prune", "Delete old snapshots, in parallel (ListBucketSnapshots + DeleteBucketSnapshot)");
  prune->footer(
      "Say which with exactly one of --keep-last N (all but the N newest; 0: all) and\n"
      "--older-than DURATION (taken more than DURATION ago: 90s, 30m, 12h, 7d, 2w). With\n"
      "--unused a snapshot that an existing fork of BUCKET was made from is kept (the FORKS\n"
      "column of tfork snapshot ls); without it, such a snapshot is deleted like any other\n"
      "(its forks stay, but the source as it was then may no longer be readable). --dry-run\n"
      "lists what would be deleted and deletes nothing. Each snapshot is reported as\n"
      "deleted, not-found (nothing to do), kept or failed. Exit 0 when nothing failed\n"
      "(nothing to prune too); 3 when BUCKET does not exist; 64 for a bad option (nothing\n"
      "is sent); when every delete failed for one reason, that error's exit code; when only\n"
      "some failed, or for different reasons, 7." +
      std::string("\n\n") + prune->get_footer());
  prune->add_option("BUCKET", prune_args->options.bucket, "Bucket whose snapshots to prune")
      ->required();
  prune->add_option("--keep-last", prune_args->keep_last, "Keep the N newest snapshots")
      ->check(cli::whole_number("--keep-last", 0, 1'000'000));
  prune->add_option("--older-than", prune_args->older_than,
                    "Delete the snapshots taken more than DURATION ago (e.g. 12h, 7d)");
  prune->add_flag("--unused", prune_args->options.unused,
                  "Keep every snapshot that an existing fork was made from");
  cli::describe(*prune, cli::honours::client | cli::honours::batch | cli::honours::dry_run,
                {"tfork snapshot prune training-data --keep-last 5 --unused",
                 "tfork snapshot prune training-data --older-than 7d --dry-run"});
  cli::on_run(*prune, context,
              [&context, prune_args] { return run_snapshot_prune(*prune_args, context); });

  auto rm_options = std::make_shared<RemoveOptions>();
  auto* rm = snapshot->add_subcommand("rm", "Delete snapshots, in parallel (DeleteBucketSnapshot)");
  rm->footer(
      "Each version is reported as deleted, not-found (nothing to do) or failed. Exit 0 when\n"
      "some are deleted and the rest were not found; 3 when none of them exists; when\n"
      "every version failed for one reason (one version named, say), that error's exit code;\n"
      "when only some failed, or for different reasons, 7. Deleting a snapshot that an existing\n"
      "fork was made from asks first (--yes off a terminal): fork diff and merge need it." +
      std::string("\n\n") + rm->get_footer());
  rm->add_option("BUCKET", rm_options->bucket, "Bucket the snapshots belong to")->required();
  rm->add_option("VERSION", rm_options->versions, "Snapshot versions (see tfork snapshot ls)")
      ->required();
  cli::describe(
      *rm,
      cli::honours::client | cli::honours::batch | cli::honours::confirm | cli::honours::dry_run,
      {"tfork snapshot rm training-data 1751631910196672425"});
  cli::on_run(*rm, context,
              [&context, rm_options] { return run_snapshot_rm(*rm_options, context); });
}

}  // namespace tfork::commands
