// tfork snapshot take | ls | rm (cli.md §2, §6; tigris-wire.md §1.4, §2.3–2.5).
#include "tfork/cli/command.hpp"
#include "tfork/cli/context.hpp"
#include "tfork/core/error.hpp"
#include "tfork/output/render.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/workflow/outcome.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace tfork::commands {
namespace {

output::Json item_error_json(const Error& error) {
  return output::Json{
      {"code", error.code},
      {"message", error.message},
      {"http_status", error.http_status ? output::Json(error.http_status) : output::Json()}};
}

void check_bucket_name(const std::string& name) {
  if (auto problem = tigris::bucket_name_problem(name))
    cli::Context::usage_error("invalid bucket name '" + name + "': " + *problem);
}

// Versions are ns decimals of up to 19 digits (tigris-wire.md §1.4), so the longer string
// is the later one and equal lengths compare as text.
bool newer(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() > b.size() : a > b;
}

// ---- snapshot take

struct TakeOptions {
  std::string bucket;
  std::optional<std::string> name;
};

struct TakeResult {
  std::string bucket;
  std::string version;
  std::optional<std::string> name;
};

void check(const TakeOptions& options) {
  check_bucket_name(options.bucket);
  if (options.name) {
    if (auto problem = tigris::snapshot_name_problem(*options.name))
      cli::Context::usage_error("invalid snapshot name: " + *problem);
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

struct ListOptions {
  std::string bucket;
  int limit = 0;  // 0: all
};

struct ListResult {
  std::string bucket;
  std::vector<tigris::Snapshot> snapshots;  // newest first
};

ListResult run_snapshot_ls(tigris::Client& client, const ListOptions& options) {
  ListResult result{options.bucket, {}};
  std::string token;
  for (;;) {
    const int remaining =
        options.limit > 0 ? options.limit - static_cast<int>(result.snapshots.size()) : 0;
    const auto operation = tigris::list_snapshots(options.bucket, token, remaining);
    const auto response = tigris::expect_success(client.send(operation), operation.name);
    auto page = tigris::parse_snapshot_list(response);
    if (!page)
      throw TforkError(ErrorKind::other, "InvalidResponse", operation.name + ": " + page.error());
    for (auto& snapshot : page->snapshots)
      result.snapshots.push_back(std::move(snapshot));
    // No IsTruncated here: an empty or absent token ends the listing (tigris-wire.md §2.4).
    if (page->continuation_token.empty()) break;
    if (options.limit > 0 && static_cast<int>(result.snapshots.size()) >= options.limit) break;
    if (page->continuation_token == token) {
      throw TforkError(ErrorKind::other, "InvalidResponse",
                       operation.name + ": the server repeated continuation token '" + token + "'");
    }
    token = page->continuation_token;
  }
  std::ranges::stable_sort(
      result.snapshots, [](const auto& a, const auto& b) { return newer(a.version, b.version); });
  if (options.limit > 0 && static_cast<int>(result.snapshots.size()) > options.limit)
    result.snapshots.resize(static_cast<std::size_t>(options.limit));
  return result;
}

output::Json to_json(const ListResult& result) {
  output::Json snapshots = output::Json::array();
  for (const auto& snapshot : result.snapshots) {
    snapshots.push_back(output::Json{
        {"version", snapshot.version},
        {"name", snapshot.name ? output::Json(*snapshot.name) : output::Json()},
        {"created", output::json_or_null(snapshot.created.empty()
                                             ? std::string()
                                             : output::normalise_rfc3339(snapshot.created))}});
  }
  return output::Json{{"bucket", result.bucket}, {"snapshots", std::move(snapshots)}};
}

std::string to_table(const ListResult& result) {
  output::Table table({"VERSION", "NAME", "CREATED"});
  for (const auto& snapshot : result.snapshots) {
    table.row({snapshot.version, snapshot.name.value_or(""),
               snapshot.created.empty() ? "" : output::normalise_rfc3339(snapshot.created)});
  }
  return table.render();
}

// ---- snapshot rm

struct RemoveOptions {
  std::string bucket;
  std::vector<std::string> versions;
};

struct RemoveItem {
  std::string version;
  std::string status;  // "deleted" | "already-gone" | "failed"
  std::optional<Error> error;
};

struct RemoveResult {
  std::string bucket;
  std::vector<RemoveItem> versions;
};

void check(const RemoveOptions& options) {
  check_bucket_name(options.bucket);
  for (const auto& version : options.versions) {
    if (!tigris::is_snapshot_version(version)) {
      cli::Context::usage_error("invalid snapshot version '" + version +
                                "': a version is a decimal Unix time in nanoseconds, e.g. "
                                "1751631910196672425 (see tfork snapshot ls)");
    }
  }
}

RemoveResult run_snapshot_rm(tigris::Client& client, const RemoveOptions& options,
                             std::size_t concurrency) {
  std::vector<tigris::Operation> operations;
  for (const auto& version : options.versions)
    operations.push_back(tigris::delete_snapshot(options.bucket, version));
  const auto answers = client.send_all(operations, concurrency);
  RemoveResult result{options.bucket, {}};
  for (std::size_t i = 0; i < answers.size(); ++i) {
    RemoveItem item{options.versions[i], "deleted", std::nullopt};
    if (auto error = tigris::error_from_result(answers[i], "DeleteBucketSnapshot")) {
      // Only an unknown snapshot is "already gone"; a missing bucket is a failure (exit 3).
      if (error->code == "NoSuchSnapshot") {
        item.status = "already-gone";
      } else {
        item.status = "failed";
        item.error = std::move(*error);
      }
    }
    result.versions.push_back(std::move(item));
  }
  return result;
}

output::Json to_json(const RemoveResult& result) {
  output::Json versions = output::Json::array();
  for (const auto& item : result.versions) {
    output::Json entry{{"version", item.version}, {"status", item.status}};
    if (item.error) entry["error"] = item_error_json(*item.error);
    versions.push_back(std::move(entry));
  }
  return output::Json{{"bucket", result.bucket}, {"versions", std::move(versions)}};
}

std::string to_table(const RemoveResult& result) {
  output::Table table({"VERSION", "STATUS", "ERROR"});
  for (const auto& item : result.versions) {
    table.row({item.version, item.status,
               item.error ? item.error->message + " (" + item.error->code + ")" : ""});
  }
  return table.render();
}

// The batch exit rule of cli.md §6 (workflow::throw_if_batch_failed).
void fail_if_any_failed(const RemoveResult& result) {
  std::vector<const Error*> failures;
  for (const auto& item : result.versions)
    if (item.error) failures.push_back(&*item.error);
  workflow::throw_if_batch_failed(failures, result.versions.size(), "snapshots");
}

// ---- registration

void register_snapshot(CLI::App& root, cli::Context& context) {
  auto* snapshot = root.add_subcommand("snapshot", "Take, list and delete bucket snapshots");
  snapshot->require_subcommand(1);

  auto take_options = std::make_shared<TakeOptions>();
  auto* take = snapshot->add_subcommand(
      "take", "Snapshot a bucket (CreateBucketSnapshot) and print the version");
  take->add_option("BUCKET", take_options->bucket, "Bucket to snapshot")->required();
  take->add_option("--name", take_options->name,
                   "Snapshot name (printable ASCII, no ';', no line breaks)");
  take->callback([&context, take_options] {
    check(*take_options);
    if (context.options.dry_run) {
      const tigris::Operation ops[] = {
          tigris::take_snapshot(take_options->bucket, take_options->name)};
      context.emit_dry_run(ops);
      return;
    }
    const auto result = run_snapshot_take(context.client(), *take_options);
    context.emit(to_json(result), to_table(result));
  });

  auto ls_options = std::make_shared<ListOptions>();
  auto* ls = snapshot->add_subcommand(
      "ls", "List a bucket's snapshots, newest first (ListBucketSnapshots)");
  ls->add_option("BUCKET", ls_options->bucket, "Bucket whose snapshots to list")->required();
  ls->add_option("--limit", ls_options->limit, "List at most N snapshots (the newest)")
      ->check(CLI::PositiveNumber);
  ls->callback([&context, ls_options] {
    check_bucket_name(ls_options->bucket);
    const auto result = run_snapshot_ls(context.client(), *ls_options);
    context.emit(to_json(result), to_table(result));
    if (result.snapshots.empty() && context.format() == output::Format::table &&
        !context.options.quiet)
      std::cerr << "No snapshots of bucket " << result.bucket << ".\n";
  });

  auto rm_options = std::make_shared<RemoveOptions>();
  auto* rm = snapshot->add_subcommand("rm", "Delete snapshots, in parallel (DeleteBucketSnapshot)");
  rm->footer(
      "Each version is reported as deleted, already-gone or failed. Exit 0 when all are deleted\n"
      "or already gone; when one failed, or all failed for one reason, that error's exit code;\n"
      "otherwise 7." +
      std::string("\n\n") + rm->get_footer());
  rm->add_option("BUCKET", rm_options->bucket, "Bucket the snapshots belong to")->required();
  rm->add_option("VERSION", rm_options->versions, "Snapshot versions (see tfork snapshot ls)")
      ->required();
  rm->callback([&context, rm_options] {
    check(*rm_options);
    std::vector<std::string> unique;
    for (const auto& version : rm_options->versions)
      if (std::ranges::find(unique, version) == unique.end()) unique.push_back(version);
    rm_options->versions = std::move(unique);
    if (context.options.dry_run) {
      std::vector<tigris::Operation> ops;
      for (const auto& version : rm_options->versions)
        ops.push_back(tigris::delete_snapshot(rm_options->bucket, version));
      context.emit_dry_run(ops);
      return;
    }
    const auto result = run_snapshot_rm(context.client(), *rm_options,
                                        static_cast<std::size_t>(context.options.concurrency));
    context.emit(to_json(result), to_table(result));
    fail_if_any_failed(result);
  });
}

}  // namespace
}  // namespace tfork::commands

TFORK_COMMAND("snapshot", tfork::commands::register_snapshot);
