// SPDX-License-Identifier: Apache-2.0
// tfork bucket create | rm (cli.md §2, §6; tigris-wire.md §2.1, §2.7, §2.10).
#include "tfork/commands/bucket.hpp"

#include "tfork/cli/context.hpp"
#include "tfork/cli/help.hpp"
#include "tfork/cli/values.hpp"
#include "tfork/commands/fork.hpp"
#include "tfork/core/error.hpp"
#include "tfork/iam/access_keys.hpp"
#include "tfork/output/render.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/tigris/fork_ops.hpp"
#include "tfork/workflow/batch.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <ranges>
#include <set>
#include <string>
#include <vector>

namespace tfork::commands::bucket {
namespace {

bool is_already_exists(const Error& error) {
  return error.code == "BucketAlreadyOwnedByYou" || error.code == "BucketAlreadyExists";
}

// HeadBucket until it shows snapshots `on` (or off), as a one-item batch: the runner's backoff
// between looks, its interruption, its transport retries.
void wait_until_visible(tigris::Client& client, const std::string& name, bool on,
                        const workflow::BatchSettings& settings, std::chrono::milliseconds settle) {
  using output::Status;
  const workflow::Backoff backoff{.first = std::chrono::milliseconds(100),
                                  .cap = std::chrono::milliseconds(2000),
                                  .budget = settle};
  const auto started = std::chrono::steady_clock::now();
  int looks = 0;
  bool shown = false;
  std::optional<Error> failure;
  workflow::BatchRunner runner(client, settings);
  std::vector<tigris::Operation> first{tigris::head_bucket(name)};
  const auto items = runner.run(
      nullptr, std::move(first), [&](std::size_t, const http::Result& answer) -> workflow::Verdict {
        ++looks;
        if (auto error = tigris::error_from_result(answer, "HeadBucket"))
          return workflow::Verdict::done(Status::failed, std::move(error));
        if (tigris::parse_head_bucket(*answer).snapshots_enabled == on) {
          shown = true;
          return workflow::Verdict::done(Status::none);
        }
        if (auto wait = backoff.wait(looks, started))
          return workflow::Verdict::then(tigris::head_bucket(name), *wait);
        return workflow::Verdict::done(Status::failed);
      });
  if (!items[0].decided) throw TforkError(workflow::interrupted_error());
  if (items[0].outcome.error) throw TforkError(*items[0].outcome.error);
  if (!shown)
    throw TforkError(
        ErrorKind::other, "SettingNotVisible",
        fmt::format("bucket {}: the service took the change, but HeadBucket still shows "
                    "snapshots {} after {} s; a snapshot or fork sent now may be refused (run "
                    "the same command again to wait longer)",
                    name, on ? "off" : "on",
                    std::chrono::duration_cast<std::chrono::seconds>(settle).count()));
  if (looks > 1) spdlog::info("bucket {}: the change showed after {} looks", name, looks);
}

}  // namespace

CreateResult run_bucket_create(tigris::Client& client, const CreateOptions& options,
                               const workflow::BatchSettings& settings) {
  const auto operation = tigris::create_bucket(options.name, options.snapshots);
  const auto result = client.send(operation);
  auto error = tigris::error_from_result(result, operation.name);
  if (!error) return {options.name, true, options.snapshots, false};

  // cli.md §7: a create retried after an ambiguous failure (the first attempt may have
  // succeeded) counts "already yours" as success.
  if (error->code == "BucketAlreadyOwnedByYou" && result && result->attempts > 1)
    return {options.name, true, options.snapshots, false};

  if (options.exist_ok && is_already_exists(*error)) {
    // Someone else's bucket answers HeadBucket with 403/404: then the 409 stands. Ours
    // answers 200, with the snapshot setting to report (tigris-wire.md §2.7).
    const auto head = client.send(tigris::head_bucket(options.name));
    if (!tigris::error_from_result(head, "HeadBucket")) {
      const auto info = tigris::parse_head_bucket(*head);
      if (options.snapshots && !info.snapshots_enabled) {
        // cli.md §10: asked for snapshots on a regular bucket of ours: turn them on.
        run_bucket_set(client, options.name, true, settings);
        return {options.name, false, true, true};
      }
      return {options.name, false, info.snapshots_enabled, false};
    }
  }
  // Say what to do: a bucket of ours is fine with --exist-ok (issue 26 §3).
  if (!options.exist_ok && error->code == "BucketAlreadyOwnedByYou")
    error->message += "; --exist-ok accepts a bucket you already own";
  throw TforkError(std::move(*error));
}

SetResult run_bucket_set(tigris::Client& client, const std::string& name, bool snapshots,
                         const workflow::BatchSettings& settings,
                         std::chrono::milliseconds settle) {
  if (!snapshots) {
    // tigris-wire §2.2: Snapshot -> Regular is refused for fork parents and forks; said here
    // before anything changes, since the real service checks it only eventually.
    const auto head = tigris::parse_head_bucket(
        tigris::expect_success(client.send(tigris::head_bucket(name)), "HeadBucket"));
    if (head.fork_source)
      throw TforkError(ErrorKind::conflict, "BucketIsFork",
                       fmt::format("bucket {} is a fork of {}: a fork keeps snapshots on", name,
                                   *head.fork_source));
    if (head.is_fork_parent)
      throw TforkError(ErrorKind::conflict, "BucketHasForks",
                       fmt::format("bucket {} has forks: snapshots stay on while forks depend "
                                   "on it (delete them first)",
                                   name));
  }
  const auto response = tigris::expect_success(
      client.send(tigris::set_bucket_type(name, snapshots)), "UpdateBucketSettings");
  if (auto message = tigris::settings_error(response))
    throw TforkError(ErrorKind::other, "BucketSettingsRefused",
                     fmt::format("bucket {}: {}", name, *message));
  wait_until_visible(client, name, snapshots, settings, settle);
  return {name, snapshots};
}

output::Json to_json(const CreateResult& result) {
  return output::Json{{"bucket", result.bucket},
                      {"created", result.created},
                      {"snapshots_enabled", result.snapshots_enabled}};
}

std::string to_table(const CreateResult& result) {
  return fmt::format("{} bucket {} (snapshots {})\n",
                     result.created ? "Created" : "Already exists:", result.bucket,
                     result.snapshots_turned_on ? "turned on"
                     : result.snapshots_enabled ? "enabled"
                                                : "disabled");
}

// ---- bucket rm

namespace {

// A refused delete of a fork parent names its forks when the listing can (cli.md §2).
void name_forks(tigris::Client& client, const std::string& bucket, Error& error) {
  std::vector<tigris::FoundFork> forks;
  try {
    forks = tigris::find_forks(client, bucket);
  } catch (const TforkError& failure) {
    spdlog::debug("could not list the forks of '{}': {}", bucket, failure.what());
    return;
  }
  if (forks.empty()) return;
  std::string names;
  for (const auto& fork : forks)
    names += (names.empty() ? "" : ", ") + fork.bucket;
  error.kind = ErrorKind::conflict;
  error.code = "BucketHasForks";
  error.message =
      fmt::format("bucket '{}' has {} fork{} ({}); delete the forks first (e.g. tfork teardown {})",
                  bucket, forks.size(), forks.size() == 1 ? "" : "s", names, forks.front().bucket);
}

}  // namespace

// The buckets are deleted in parallel, each with its own status, in input order (style.md
// §6), in three phases of the batch runner:
// 1. "checks": HeadBucket of each, with the first page of ListAccessKeys in the same batch. A
//    fork parent is never force-deleted, even by a server that would allow it (cli.md §2:
//    force never overrides "has forks").
// 2. "buckets": DeleteBucket of each bucket that is there. A fork is deleted only once every
//    access key is listed: its keys go with it (issue 21 §2), and the grants they had are gone
//    once the bucket is.
// 3. "keys": every key whose roles were all on forks deleted in step 2 is revoked.
RemoveResult run_bucket_rm(tigris::Client& client, const RemoveOptions& options,
                           const workflow::BatchSettings& settings) {
  using output::Status;
  RemoveResult result;
  workflow::BatchRunner runner(client, settings);
  const std::size_t n = options.names.size();
  std::vector<tigris::Operation> heads;
  for (const auto& name : options.names) {
    result.buckets.push_back({name, {Status::failed, {}}});
    heads.push_back(tigris::head_bucket(name));
  }
  heads.push_back(iam::list_access_keys(""));
  std::vector<bool> is_fork(n, false);
  std::optional<http::Result> first_key_page;
  {
    auto phase = runner.phase("checks", n);
    const auto items =
        runner.run(&phase, std::move(heads), [&](std::size_t i, const http::Result& answer) {
          if (i == n) {
            first_key_page = answer;
            return workflow::Verdict::aside();
          }
          auto& item = result.buckets[i];
          if (auto error = tigris::error_from_result(answer, "HeadBucket")) {
            if (bucket_gone(*error)) return workflow::Verdict::done(Status::not_found);
            return workflow::Verdict::done(Status::failed, std::move(*error));
          }
          const auto head = tigris::parse_head_bucket(*answer);
          if (options.force && head.is_fork_parent)
            return workflow::Verdict::done(
                Status::failed,
                Error{ErrorKind::conflict,
                      "BucketHasForks",
                      "bucket '" + item.bucket + "' has forks; delete the forks first",
                      409,
                      {}});
          is_fork[i] = head.fork_source.has_value();
          return workflow::Verdict::done(Status::exists);
        });
    for (std::size_t i = 0; i < n; ++i)
      result.buckets[i].outcome =
          items[i].decided ? items[i].outcome
                           : output::ItemStatus{Status::failed, workflow::interrupted_error()};
  }
  // The keys, when a fork is among the buckets to delete.
  std::vector<iam::KeySummary> keys;
  std::optional<Error> key_error;
  const bool any_fork = std::ranges::any_of(std::views::iota(std::size_t{0}, n), [&](auto i) {
    return is_fork[i] && result.buckets[i].outcome.status == Status::exists;
  });
  if (any_fork && !runner.interrupted()) {
    try {
      auto error = first_key_page ? tigris::error_from_result(*first_key_page, "ListAccessKeys")
                                  : std::optional<Error>(workflow::interrupted_error());
      if (error) throw TforkError(std::move(*error));
      auto page = iam::parse_key_list(**first_key_page);
      if (!page)
        throw TforkError(ErrorKind::other, "InvalidResponse", "ListAccessKeys: " + page.error());
      keys = std::move(page->keys);
      if (!page->marker.empty())
        for (auto& key : iam::list_all_access_keys(client, page->marker))
          keys.push_back(std::move(key));
    } catch (const TforkError& e) {
      key_error = e.error();
      key_error->message =
          "could not list access keys, so the fork was not deleted (its keys "
          "would outlive it): " +
          key_error->message;
    }
  }
  std::vector<tigris::Operation> deletes;
  std::vector<std::size_t> deleting;
  for (std::size_t i = 0; i < n; ++i) {
    auto& outcome = result.buckets[i].outcome;
    if (outcome.status != Status::exists) continue;
    if (is_fork[i] && key_error) {
      outcome = {Status::failed, key_error};
      continue;
    }
    deleting.push_back(i);
    deletes.push_back(tigris::delete_bucket(options.names[i], options.force));
  }
  if (!deletes.empty()) {
    auto phase = runner.phase("buckets", deletes.size());
    const auto items =
        runner.run(&phase, std::move(deletes), [&](std::size_t, const http::Result& answer) {
          if (auto error = tigris::error_from_result(answer, "DeleteBucket")) {
            if (bucket_gone(*error)) return workflow::Verdict::done(Status::not_found);
            if (error->code == "BucketNotEmpty" && !options.force)
              error->message += " (--force deletes its objects too)";
            return workflow::Verdict::done(Status::failed, std::move(*error));
          }
          return workflow::Verdict::done(Status::deleted);
        });
    for (std::size_t k = 0; k < deleting.size(); ++k)
      result.buckets[deleting[k]].outcome =
          items[k].decided ? items[k].outcome
                           : output::ItemStatus{Status::failed, workflow::interrupted_error()};
  }
  for (auto& item : result.buckets) {
    // Only a conflict can be "has forks" (BucketHasForks, or BucketNotEmpty from a service
    // that does not tell the two apart); the listing runs for those alone.
    if (item.outcome.error && item.outcome.error->kind == ErrorKind::conflict)
      name_forks(client, item.bucket, *item.outcome.error);
  }
  // The deleted forks' keys: every key whose roles were all on them.
  std::set<std::string, std::less<>> deleted_forks;
  for (std::size_t i = 0; i < n; ++i)
    if (is_fork[i] && result.buckets[i].outcome.status == Status::deleted)
      deleted_forks.insert(options.names[i]);
  std::vector<tigris::Operation> revokes;
  for (const auto& key : keys) {
    if (key.buckets_role.empty()) continue;
    const bool only_deleted = std::ranges::all_of(
        key.buckets_role, [&](const auto& role) { return deleted_forks.contains(role.first); });
    if (!only_deleted) continue;
    result.keys.push_back({key.id, key.name, {Status::failed, {}}});
    revokes.push_back(iam::delete_access_key(key.id));
  }
  if (!revokes.empty()) {
    auto phase = runner.phase("keys", revokes.size());
    const auto items =
        runner.run(&phase, std::move(revokes), [&](std::size_t k, const http::Result& answer) {
          if (auto error = tigris::error_from_result(answer, "DeleteAccessKey")) {
            if (key_gone(*error)) return workflow::Verdict::done(Status::already_gone);
            error->message = result.keys[k].access_key_id + ": " + error->message;
            return workflow::Verdict::done(Status::failed, std::move(*error));
          }
          return workflow::Verdict::done(Status::deleted);
        });
    for (std::size_t k = 0; k < items.size(); ++k)
      result.keys[k].outcome =
          items[k].decided ? items[k].outcome
                           : output::ItemStatus{Status::failed, workflow::interrupted_error()};
  }
  return result;
}

output::Json to_json(const RemoveResult& result) {
  output::Json buckets = output::Json::array();
  for (const auto& item : result.buckets)
    buckets.push_back(output::item_json(output::Json{{"bucket", item.bucket}}, item.outcome));
  output::Json keys = output::Json::array();
  for (const auto& item : result.keys)
    keys.push_back(output::item_json(
        output::Json{{"access_key_id", item.access_key_id}, {"name", item.name}}, item.outcome));
  return output::Json{{"buckets", std::move(buckets)}, {"keys", std::move(keys)}};
}

std::string to_table(const RemoveResult& result) {
  output::Table table({"BUCKET", "STATUS", "ERROR"});
  for (const auto& item : result.buckets)
    table.row({item.bucket, output::status_cell(item.outcome.status),
               output::item_error_text(item.outcome)});
  // The keys of deleted forks, revoked with them.
  for (const auto& item : result.keys)
    table.row({"key " + item.access_key_id, output::status_cell(item.outcome.status),
               output::item_error_text(item.outcome)});
  return table.render();
}

std::optional<Error> batch_error(const RemoveResult& result) {
  workflow::BatchTally tally;
  tally.total = result.buckets.size();
  for (const auto& item : result.buckets) {
    if (item.outcome.status == output::Status::failed)
      tally.failures.push_back(&*item.outcome.error);
    if (item.outcome.status == output::Status::not_found) tally.missing.push_back(item.bucket);
  }
  for (const auto& item : result.keys) {
    if (item.outcome.status != output::Status::failed) continue;
    ++tally.total;
    tally.failures.push_back(&*item.outcome.error);
  }
  return workflow::batch_error(tally, {"buckets", "bucket", "could not be deleted"});
}

// ---- bucket ls

namespace {

output::Json optional_json(const std::optional<std::string>& value) {
  return value ? output::Json(*value) : output::Json();
}

output::Json optional_json(const std::optional<bool>& value) {
  return value ? output::Json(*value) : output::Json();
}

std::string yes_no(const std::optional<bool>& value) {
  return value ? (*value ? "yes" : "no") : "-";
}

}  // namespace

ListResult run_bucket_ls(tigris::Client& client, const std::optional<std::string>& forks_of) {
  ListResult result{forks_of, {}, std::chrono::system_clock::now()};
  if (forks_of) {
    auto listed = fork::run_fork_ls(client, *forks_of, result.now);
    for (std::size_t i = 0; i < listed.forks.size(); ++i) {
      auto& fork = listed.forks[i];
      // Forks are snapshot-enabled by birth (tigris-wire.md §2.6).
      result.buckets.push_back(
          {std::move(fork.bucket), std::move(fork.created), true, *forks_of,
           fork.snapshot.empty() ? std::nullopt : std::optional<std::string>(fork.snapshot),
           fork.is_fork_parent, listed.expires_at[i]});
    }
    return result;
  }
  for (auto& entry : tigris::list_all_buckets(client)) {
    // ForkInfo is left out where it does not apply (tigris-wire.md §2.8a): no entry, no
    // parents, no children.
    const bool parent = entry.has_children.value_or(false);
    result.buckets.push_back(
        {std::move(entry.bucket), std::move(entry.created), entry.snapshots_enabled,
         std::move(entry.source),
         entry.snapshot && !entry.snapshot->empty() ? std::move(entry.snapshot) : std::nullopt,
         parent, std::nullopt});
  }
  std::ranges::sort(result.buckets, output::natural_less, &ListRow::bucket);
  return result;
}

output::Json to_json(const ListResult& result) {
  output::Json buckets = output::Json::array();
  for (const auto& row : result.buckets) {
    buckets.push_back(output::Json{
        {"bucket", row.bucket},
        {"created", output::json_time(row.created)},
        {"snapshots_enabled", optional_json(row.snapshots_enabled)},
        {"fork_source", optional_json(row.fork_source)},
        {"fork_source_snapshot", optional_json(row.fork_source_snapshot)},
        {"is_fork_parent", optional_json(row.is_fork_parent)},
        {"expires_at",
         row.expires_at ? output::Json(workflow::expiry_text(*row.expires_at)) : output::Json()}});
  }
  return output::Json{{"forks_of", optional_json(result.forks_of)},
                      {"buckets", std::move(buckets)}};
}

std::string to_table(const ListResult& result) {
  // EXPIRES only for the forks of one bucket: that is where an expiry is looked up.
  std::vector<std::string> columns{"BUCKET",        "SNAPSHOTS",   "FORK_SOURCE",
                                   "FORK_SNAPSHOT", "FORK_PARENT", "CREATED"};
  if (result.forks_of) columns.emplace_back("EXPIRES");
  output::Table table(std::move(columns));
  for (const auto& row : result.buckets) {
    std::vector<std::string> cells{row.bucket,
                                   yes_no(row.snapshots_enabled),
                                   output::cell_or_dash(row.fork_source.value_or("")),
                                   output::cell_or_dash(row.fork_source_snapshot.value_or("")),
                                   yes_no(row.is_fork_parent),
                                   output::table_time(row.created)};
    if (result.forks_of) cells.push_back(fork::expires_cell(row.expires_at, result.now));
    table.row(std::move(cells));
  }
  return table.render();
}

// ---- bucket ls --tree

namespace {

constexpr int k_max_tree_depth = 100;  // a server's fork loop must not recurse forever

// A bucket of the tree still to be filled in, and whether the listing said it has forks.
struct Pending {
  TreeNode* node;
  std::optional<bool> has_forks;
};

bool newer_version(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() > b.size() : a > b;
}

// The snapshots of every bucket of one level: first pages in parallel, the rare further pages
// by the one pager. The root's failure is the command's (a missing source is exit 3); a fork's
// is a warning (it may have been deleted since it was listed).
std::vector<std::vector<tigris::Snapshot>> level_snapshots(tigris::Client& client,
                                                           const std::vector<Pending>& level,
                                                           bool root, std::size_t concurrency) {
  std::vector<tigris::Operation> operations;
  for (const auto& pending : level)
    operations.push_back(tigris::list_snapshots(pending.node->bucket, "", 0));
  const auto answers = client.send_all(operations, concurrency);
  std::vector<std::vector<tigris::Snapshot>> out(level.size());
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const auto& bucket = level[i].node->bucket;
    try {
      if (auto error = tigris::error_from_result(answers[i], "ListBucketSnapshots")) {
        if (root && error->kind == ErrorKind::not_found)
          error->message = "bucket " + bucket + " does not exist";
        throw TforkError(std::move(*error));
      }
      auto page = tigris::parse_snapshot_list(*answers[i]);
      if (!page)
        throw TforkError(ErrorKind::other, "InvalidResponse",
                         "ListBucketSnapshots: " + page.error());
      out[i] = page->continuation_token.empty() || page->snapshots.empty()
                   ? std::move(page->snapshots)
                   : tigris::list_all_snapshots(client, bucket);
    } catch (const TforkError& failure) {
      if (root) throw;
      if (failure.error().kind != ErrorKind::not_found)
        spdlog::warn("could not list the snapshots of {}: {}", output::printable(bucket),
                     failure.what());
    }
    std::ranges::stable_sort(
        out[i], [](const auto& a, const auto& b) { return newer_version(a.version, b.version); });
  }
  return out;
}

// Hangs `forks` under `node`: each under the snapshot it was made from (a node marked unlisted
// when that snapshot is not among `snapshots`), or under the bucket itself when the listing
// names no snapshot. Returns the new nodes, to be filled in on the next level.
std::vector<Pending> attach(TreeNode& node, std::vector<tigris::Snapshot> snapshots,
                            std::vector<tigris::FoundFork> forks, std::set<std::string>& seen) {
  for (auto& snapshot : snapshots)
    node.snapshots.push_back({std::move(snapshot), true, {}});
  std::ranges::sort(forks, output::natural_less, &tigris::FoundFork::bucket);
  for (const auto& fork : forks) {
    if (!seen.insert(fork.bucket).second) continue;  // listed twice, or a loop
    TreeNode child{fork.bucket, fork.created, {}, {}};
    if (fork.snapshot.empty()) {
      node.forks.push_back(std::move(child));
      continue;
    }
    auto at = std::ranges::find(node.snapshots, fork.snapshot,
                                [](const TreeSnapshot& s) { return s.snapshot.version; });
    if (at == node.snapshots.end()) {
      node.snapshots.push_back({{fork.snapshot, std::nullopt, ""}, false, {}});
      at = node.snapshots.end() - 1;
    }
    at->forks.push_back(std::move(child));
  }
  std::ranges::stable_sort(node.snapshots, [](const auto& a, const auto& b) {
    return newer_version(a.snapshot.version, b.snapshot.version);
  });
  // The nodes are in place now: pointers to them stay valid while their own children grow.
  std::map<std::string, std::optional<bool>> parent_of;
  for (const auto& fork : forks)
    parent_of.emplace(fork.bucket, fork.is_fork_parent);
  std::vector<Pending> next;
  for (auto& snapshot : node.snapshots)
    for (auto& child : snapshot.forks)
      next.push_back({&child, parent_of[child.bucket]});
  for (auto& child : node.forks)
    next.push_back({&child, parent_of[child.bucket]});
  return next;
}

}  // namespace

TreeNode run_bucket_tree(tigris::Client& client, const std::string& source,
                         std::size_t concurrency) {
  TreeNode root{source, "", {}, {}};
  std::set<std::string> seen{source};
  std::vector<Pending> level{{&root, std::nullopt}};
  for (int depth = 0; !level.empty() && depth < k_max_tree_depth; ++depth) {
    auto snapshots = level_snapshots(client, level, depth == 0, concurrency);
    std::vector<Pending> next;
    for (std::size_t i = 0; i < level.size(); ++i) {
      std::vector<tigris::FoundFork> forks;
      // A listing that says "no children" is believed; one that does not say is asked.
      if (level[i].has_forks != false) {
        try {
          forks = tigris::find_forks(client, level[i].node->bucket);
        } catch (const TforkError& failure) {
          if (depth == 0) throw;
          spdlog::warn("could not list the forks of {}: {}",
                       output::printable(level[i].node->bucket), failure.what());
        }
      }
      auto children = attach(*level[i].node, std::move(snapshots[i]), std::move(forks), seen);
      next.insert(next.end(), children.begin(), children.end());
    }
    level = std::move(next);
  }
  return root;
}

output::Json to_json(const TreeNode& tree) {
  output::Json snapshots = output::Json::array();
  for (const auto& node : tree.snapshots) {
    output::Json forks = output::Json::array();
    for (const auto& fork : node.forks)
      forks.push_back(to_json(fork));
    const auto& snapshot = node.snapshot;
    snapshots.push_back(
        output::Json{{"version", snapshot.version},
                     {"name", snapshot.name ? output::Json(*snapshot.name) : output::Json()},
                     {"created", output::json_time(snapshot.created)},
                     {"listed", node.listed},
                     {"forks", std::move(forks)}});
  }
  output::Json forks = output::Json::array();
  for (const auto& fork : tree.forks)
    forks.push_back(to_json(fork));
  return output::Json{{"bucket", tree.bucket},
                      {"created", output::json_time(tree.created)},
                      {"snapshots", std::move(snapshots)},
                      {"forks", std::move(forks)}};
}

namespace {

std::string bucket_label(const TreeNode& node) {
  auto label = output::printable(node.bucket);
  if (!node.created.empty()) label += "  created " + output::table_time(node.created);
  return label;
}

std::string snapshot_label(const TreeSnapshot& node) {
  auto label = "snapshot " + output::printable(node.snapshot.version);
  if (node.snapshot.name) label += " \"" + output::printable(*node.snapshot.name) + "\"";
  if (!node.listed) return label + "  (no longer listed)";
  if (!node.snapshot.created.empty())
    label += "  taken " + output::table_time(node.snapshot.created);
  return label;
}

void draw(const TreeNode& node, const std::string& prefix, std::string& out) {
  // One line per child: the snapshots (each with its forks below it), then the forks whose
  // snapshot is not known.
  const auto count = node.snapshots.size() + node.forks.size();
  std::size_t index = 0;
  auto branch = [&](const std::string& label) {
    const bool last = ++index == count;
    out += prefix + (last ? "└── " : "├── ") + label + "\n";
    return prefix + (last ? "    " : "│   ");
  };
  for (const auto& snapshot : node.snapshots) {
    const auto inner = branch(snapshot_label(snapshot));
    for (std::size_t i = 0; i < snapshot.forks.size(); ++i) {
      const bool last = i + 1 == snapshot.forks.size();
      out += inner + (last ? "└── " : "├── ") + bucket_label(snapshot.forks[i]) + "\n";
      draw(snapshot.forks[i], inner + (last ? "    " : "│   "), out);
    }
  }
  for (const auto& fork : node.forks) {
    const auto inner = branch(bucket_label(fork) + "  (snapshot not known)");
    draw(fork, inner, out);
  }
}

}  // namespace

std::string to_table(const TreeNode& tree) {
  std::string out = bucket_label(tree) + "\n";
  draw(tree, "", out);
  return out;
}

}  // namespace tfork::commands::bucket

namespace tfork::commands::bucket {

cli::CommandResult run_bucket_create(const CreateOptions& options, cli::Context& context) {
  cli::require_bucket_name(options.name);
  if (context.options.dry_run) {
    const tigris::Operation ops[] = {tigris::create_bucket(options.name, options.snapshots)};
    return context.dry_run(ops);
  }
  const auto result = run_bucket_create(context.client(), options, context.batch_settings());
  return cli::document(to_json(result), to_table(result));
}

cli::CommandResult run_bucket_rm(RemoveOptions options, cli::Context& context) {
  for (const auto& name : options.names)
    cli::require_bucket_name(name);
  // A name given twice is deleted once.
  std::vector<std::string> unique;
  for (const auto& name : options.names)
    if (std::ranges::find(unique, name) == unique.end()) unique.push_back(name);
  options.names = std::move(unique);
  if (context.options.dry_run) {
    std::vector<tigris::Operation> ops;
    for (const auto& name : options.names)
      ops.push_back(tigris::delete_bucket(name, options.force));
    return context.dry_run(ops);
  }
  // Deleting contents is an operator's act (issue 21 §3): asked on a terminal, --yes elsewhere.
  if (options.force)
    context.confirm(fmt::format("Delete {} and every object in {} (--force)?",
                                fmt::join(options.names, ", "),
                                options.names.size() == 1 ? "it" : "them"));
  const auto result = run_bucket_rm(context.client(), options, context.batch_settings());
  auto outcome = cli::document(to_json(result), to_table(result));
  outcome.error = batch_error(result);
  return outcome;
}

cli::CommandResult run_bucket_ls(const ListOptions& options, cli::Context& context) {
  if (options.forks_of) cli::require_bucket_name(*options.forks_of, "--forks-of bucket");
  if (options.tree) {
    if (!options.forks_of)
      usage_error("--tree draws the fork tree of one bucket: name it with --forks-of S");
    const auto tree = run_bucket_tree(context.client(), *options.forks_of,
                                      static_cast<std::size_t>(context.options.concurrency));
    return cli::document(to_json(tree), to_table(tree));
  }
  const auto result = run_bucket_ls(context.client(), options.forks_of);
  auto outcome = cli::document(to_json(result), to_table(result));
  if (result.buckets.empty())
    outcome.notice =
        result.forks_of ? "No forks of bucket " + *result.forks_of + "." : "No buckets.";
  return outcome;
}

cli::CommandResult run_bucket_set(const SetOptions& options, cli::Context& context) {
  cli::require_bucket_name(options.name);
  const bool on = options.snapshots == "on";
  if (context.options.dry_run) {
    const tigris::Operation ops[] = {tigris::set_bucket_type(options.name, on)};
    return context.dry_run(ops);
  }
  const auto result = run_bucket_set(context.client(), options.name, on, context.batch_settings());
  return cli::document(
      output::Json{{"bucket", result.bucket}, {"snapshots_enabled", result.snapshots_enabled}},
      fmt::format("bucket {}: snapshots {}\n", result.bucket,
                  result.snapshots_enabled ? "on" : "off"));
}

}  // namespace tfork::commands::bucket

namespace tfork::commands {

using namespace bucket;

void register_bucket(CLI::App& root, cli::Context& context) {
  auto* bucket = root.add_subcommand("bucket", "Create, change and delete buckets");
  bucket->require_subcommand(1);

  auto create_options = std::make_shared<CreateOptions>();
  auto* create = bucket->add_subcommand("create", "Create a bucket (CreateBucket)");
  create->footer(
      "Exit 6 when the bucket exists, unless --exist-ok; 64 for an invalid name (nothing is\n"
      "sent)." +
      std::string("\n\n") + create->get_footer());
  create->add_option("NAME", create_options->name, "Bucket name (3-63 characters: a-z 0-9 . -)")
      ->required();
  create->add_flag("--snapshots", create_options->snapshots,
                   "Enable snapshots and forks (X-Tigris-Enable-Snapshot: true)");
  create->add_flag("--exist-ok", create_options->exist_ok,
                   "An existing bucket you own is success, reported as \"created\": false");
  cli::describe(*create, cli::honours::client | cli::honours::dry_run,
                {"tfork bucket create training-data --snapshots",
                 "tfork bucket create training-data --snapshots --exist-ok"});
  cli::on_run(*create, context,
              [&context, create_options] { return run_bucket_create(*create_options, context); });

  auto rm_options = std::make_shared<RemoveOptions>();
  auto* rm = bucket->add_subcommand("rm", "Delete buckets, in parallel (DeleteBucket)");
  rm->footer(
      "Each bucket is reported as deleted, not-found (nothing to do) or failed; a bucket that\n"
      "has forks is refused, naming its forks. A deleted fork's access keys (every key whose\n"
      "roles were all on deleted forks) are revoked with it. Exit 0 when every bucket is deleted "
      "or some\n"
      "are and the rest were not found; 3 when none of them exists; when every bucket failed\n"
      "for one reason (one bucket named, say), that error's exit code; when only some failed,\n"
      "or for different reasons, 7." +
      std::string("\n\n") + rm->get_footer());
  rm->add_option("NAME", rm_options->names, "Buckets to delete")->required();
  rm->add_flag("--force", rm_options->force,
               "Delete the contents too (Tigris-Force-Delete: true); asks on a terminal, needs "
               "--yes elsewhere; never deletes a bucket that has forks");
  cli::describe(
      *rm,
      cli::honours::client | cli::honours::batch | cli::honours::confirm | cli::honours::dry_run,
      {"tfork bucket rm scratch-1 scratch-2", "tfork bucket rm old-data --force --yes"});
  cli::on_run(*rm, context, [&context, rm_options] { return run_bucket_rm(*rm_options, context); });

  auto ls_options = std::make_shared<ListOptions>();
  auto* ls = bucket->add_subcommand(
      "ls", "List buckets with their fork information (ListBuckets with IncludeForkInfo)");
  ls->footer(
      "Each bucket with whether snapshots are on, the bucket and snapshot it was forked from,\n"
      "and whether it has forks. --forks-of S lists only the forks of S (ListBuckets with\n"
      "X-Tigris-Fork), with EXPIRES: when each expires (fork create --expires-in, read from\n"
      "the name of its snapshot; \"expires_at\" in JSON, null when never).\n"
      "--tree --forks-of S draws the fork tree of S: its snapshots, the forks\n"
      "made from each, their snapshots and forks in turn (with -o json, one nested\n"
      "document). Exit 3 when S does not exist." +
      std::string("\n\n") + ls->get_footer());
  ls->add_option("--forks-of", ls_options->forks_of, "List only the forks of this bucket");
  ls->add_flag("--tree", ls_options->tree,
               "Draw the fork tree of the --forks-of bucket: snapshots, forks, forks of forks");
  cli::describe(*ls, cli::honours::client,
                {"tfork bucket ls", "tfork bucket ls --forks-of training-data --json"});
  cli::on_run(*ls, context, [&context, ls_options] { return run_bucket_ls(*ls_options, context); });

  auto set_options = std::make_shared<SetOptions>();
  auto* set = bucket->add_subcommand("set",
                                     "Change a bucket's settings (the bucket-settings "
                                     "PATCH)");
  set->footer(
      "--snapshots on makes a regular bucket snapshot-enabled (it can then be snapshotted and\n"
      "forked); off is refused (exit 6) while the bucket has forks or is one." +
      std::string("\n\n") + set->get_footer());
  set->add_option("NAME", set_options->name, "Bucket name")->required();
  set->add_option("--snapshots", set_options->snapshots, "on or off")
      ->transform(cli::one_of("--snapshots", {"on", "off"}))
      ->required();
  cli::describe(*set, cli::honours::client | cli::honours::dry_run,
                {"tfork bucket set training-data --snapshots on"});
  cli::on_run(*set, context,
              [&context, set_options] { return run_bucket_set(*set_options, context); });
}

}  // namespace tfork::commands
