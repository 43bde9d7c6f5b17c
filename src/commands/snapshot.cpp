// tfork snapshot take | ls | rm (cli.md §2, §6; tigris-wire.md §1.4, §2.3–2.5).
#include "tfork/commands/snapshot.hpp"

#include "tfork/cli/context.hpp"
#include "tfork/cli/values.hpp"
#include "tfork/core/error.hpp"
#include "tfork/output/progress.hpp"
#include "tfork/output/render.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/tigris/paging.hpp"
#include "tfork/workflow/outcome.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
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
  const auto response = tigris::expect_success(client.send(operation), operation.name);
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

ListResult run_snapshot_ls(tigris::Client& client, const ListOptions& options) {
  ListResult result{options.bucket,
                    tigris::list_all_snapshots(client, options.bucket, options.limit)};
  std::ranges::stable_sort(
      result.snapshots, [](const auto& a, const auto& b) { return newer(a.version, b.version); });
  if (options.limit > 0 && static_cast<int>(result.snapshots.size()) > options.limit)
    result.snapshots.resize(static_cast<std::size_t>(options.limit));
  return result;
}

output::Json to_json(const ListResult& result) {
  output::Json snapshots = output::Json::array();
  for (const auto& snapshot : result.snapshots) {
    snapshots.push_back(
        output::Json{{"version", snapshot.version},
                     {"name", snapshot.name ? output::Json(*snapshot.name) : output::Json()},
                     {"created", output::json_time(snapshot.created)}});
  }
  return output::Json{{"bucket", result.bucket}, {"snapshots", std::move(snapshots)}};
}

std::string to_table(const ListResult& result) {
  output::Table table({"VERSION", "NAME", "CREATED"});
  for (const auto& snapshot : result.snapshots) {
    table.row({snapshot.version, output::cell_or_dash(snapshot.name.value_or("")),
               output::table_time(snapshot.created)});
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

RemoveResult run_snapshot_rm(tigris::Client& client, const RemoveOptions& options,
                             std::size_t concurrency, bool progress) {
  std::vector<tigris::Operation> operations;
  for (const auto& version : options.versions)
    operations.push_back(tigris::delete_snapshot(options.bucket, version));
  RemoveResult result{options.bucket, {}};
  for (const auto& version : options.versions)
    result.versions.push_back({version, {"deleted", std::nullopt}});
  output::Progress line("snapshots", operations.size(), progress);
  std::vector<bool> seen(operations.size(), false);
  auto on_done = [&](std::size_t i, const http::Result& answer) {
    seen[i] = true;
    auto& item = result.versions[i];
    if (auto error = tigris::error_from_result(answer, "DeleteBucketSnapshot")) {
      // Only an unknown snapshot is "not found"; a missing bucket is a failure (exit 3).
      if (snapshot_gone(*error)) {
        item.outcome.status = "not-found";
      } else {
        item.outcome.status = "failed";
        item.outcome.error = std::move(*error);
      }
    }
    line.advance(item.outcome.status != "failed");
  };
  const auto answers = client.send_all(operations, concurrency, on_done);
  for (std::size_t i = 0; i < answers.size(); ++i)
    if (!seen[i]) on_done(i, answers[i]);
  line.finish();
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
  std::vector<const Error*> failures;
  std::vector<std::string> missing;
  for (const auto& item : result.versions) {
    if (item.outcome.error) failures.push_back(&*item.outcome.error);
    if (item.outcome.status == "not-found") missing.push_back(item.version);
  }
  if (auto none = workflow::nothing_found_error(missing, result.versions.size(),
                                                fmt::format("snapshot of {}", result.bucket)))
    return none;
  return workflow::batch_error(failures, result.versions.size(), "snapshots");
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
  take->add_option("--name", take_options->name,
                   "Snapshot name (printable ASCII, no ';', no line breaks)");
  cli::on_run(*take, context, [&context, take_options] {
    check(*take_options);
    if (context.options.dry_run) {
      const tigris::Operation ops[] = {
          tigris::take_snapshot(take_options->bucket, take_options->name)};
      return context.dry_run(ops);
    }
    const auto result = run_snapshot_take(context.client(), *take_options);
    return cli::document(to_json(result), to_table(result));
  });

  auto ls_options = std::make_shared<ListOptions>();
  auto* ls = snapshot->add_subcommand(
      "ls", "List a bucket's snapshots, newest first (ListBucketSnapshots)");
  ls->add_option("BUCKET", ls_options->bucket, "Bucket whose snapshots to list")->required();
  ls->add_option("--limit", ls_options->limit, "List at most N snapshots (the newest)")
      ->check(cli::whole_number("--limit", 1, 1'000'000));
  cli::on_run(*ls, context, [&context, ls_options] {
    cli::require_bucket_name(ls_options->bucket);
    const auto result = run_snapshot_ls(context.client(), *ls_options);
    auto outcome = cli::document(to_json(result), to_table(result));
    if (result.snapshots.empty()) outcome.notice = "No snapshots of bucket " + result.bucket + ".";
    return outcome;
  });

  auto rm_options = std::make_shared<RemoveOptions>();
  auto* rm = snapshot->add_subcommand("rm", "Delete snapshots, in parallel (DeleteBucketSnapshot)");
  rm->footer(
      "Each version is reported as deleted, not-found (nothing to do) or failed. Exit 0 when\n"
      "some are deleted and the rest were not found; 3 when none of them exists; when\n"
      "every version failed for one reason (one version named, say), that error's exit code;\n"
      "when only some failed, or for different reasons, 7." +
      std::string("\n\n") + rm->get_footer());
  rm->add_option("BUCKET", rm_options->bucket, "Bucket the snapshots belong to")->required();
  rm->add_option("VERSION", rm_options->versions, "Snapshot versions (see tfork snapshot ls)")
      ->required();
  cli::on_run(*rm, context, [&context, rm_options] {
    check(*rm_options);
    std::vector<std::string> unique;
    for (const auto& version : rm_options->versions)
      if (std::ranges::find(unique, version) == unique.end()) unique.push_back(version);
    rm_options->versions = std::move(unique);
    if (context.options.dry_run) {
      std::vector<tigris::Operation> ops;
      for (const auto& version : rm_options->versions)
        ops.push_back(tigris::delete_snapshot(rm_options->bucket, version));
      return context.dry_run(ops);
    }
    const auto result = run_snapshot_rm(context.client(), *rm_options,
                                        static_cast<std::size_t>(context.options.concurrency),
                                        context.progress_enabled());
    auto outcome = cli::document(to_json(result), to_table(result));
    outcome.error = batch_error(result);
    return outcome;
  });
}

}  // namespace tfork::commands
