#include "tfork/workflow/teardown.hpp"

#include "tfork/iam/access_keys.hpp"
#include "tfork/output/progress.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/workflow/outcome.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>
#include <thread>

namespace tfork::workflow {
namespace {

// A fork `fork create --prefix P` names: "P-<n>" (P may be given as "P-" too). A bare
// starts_with would take run-42-1 for a fork of run-4.
bool is_run_fork(std::string_view bucket, std::string_view prefix) {
  if (prefix.ends_with('-')) prefix.remove_suffix(1);
  if (!bucket.starts_with(prefix) || bucket.size() < prefix.size() + 2) return false;
  const auto rest = bucket.substr(prefix.size());
  return rest[0] == '-' &&
         std::ranges::all_of(rest.substr(1), [](char c) { return c >= '0' && c <= '9'; });
}

// Parents are deleted after their children; on Tigris a parent may still see a just-deleted
// child for a moment (eventual consistency, tigris-wire.md §7.3), so a 409 on a later wave is
// retried a few times before it counts.
constexpr int k_parent_conflict_retries = 3;
constexpr auto k_parent_conflict_delay = std::chrono::milliseconds(500);

std::string_view bucket_outcome_name(BucketOutcome outcome) {
  switch (outcome) {
    case BucketOutcome::deleted:
      return "deleted";
    case BucketOutcome::already_gone:
      return "already-gone";
    case BucketOutcome::failed:
      return "failed";
    case BucketOutcome::skipped:
      return "skipped";
  }
  return "failed";
}

std::string_view key_outcome_name(KeyOutcome outcome) {
  switch (outcome) {
    case KeyOutcome::deleted:
      return "deleted";
    case KeyOutcome::already_gone:
      return "already-gone";
    case KeyOutcome::none:
      return "none";
    case KeyOutcome::failed:
      return "failed";
  }
  return "failed";
}

template <typename Item>
output::ItemStatus item_status(const Item& item) {
  return {std::string(bucket_outcome_name(item.status)), item.error};
}

bool is_gone(const Error& error) {
  return error.http_status == 404 || error.code == "NoSuchEntity" || error.code == "NoSuchBucket";
}

bool is_cancelled(const http::Result& result) {
  return !result && result.error().kind == http::TransportError::Kind::cancelled;
}

Error interrupted_error() {
  return Error{ErrorKind::interrupted,
               "Interrupted",
               "interrupted before this fork was torn down; run teardown again to finish",
               0,
               {}};
}

[[noreturn]] void usage(const std::string& message) {
  throw TforkError(ErrorKind::usage, "UsageError", message);
}

// Combines the outcome of one more key delete into the item's key status.
KeyOutcome merge_key(KeyOutcome current, KeyOutcome next) {
  if (current == KeyOutcome::failed || next == KeyOutcome::failed) return KeyOutcome::failed;
  if (current == KeyOutcome::deleted || next == KeyOutcome::deleted) return KeyOutcome::deleted;
  if (current == KeyOutcome::already_gone || next == KeyOutcome::already_gone)
    return KeyOutcome::already_gone;
  return KeyOutcome::none;
}

class TeardownRun {
 public:
  TeardownRun(tigris::Client& client, const TeardownPlan& plan,
              const std::atomic<bool>& interrupted)
      : client_(client), plan_(plan), interrupted_(interrupted) {}

  TeardownResult run() {
    const auto& targets = plan_.targets;
    result_.forks.reserve(targets.size());
    for (const auto& target : targets) {
      TeardownItem item;
      item.bucket = target.bucket;
      result_.forks.push_back(std::move(item));
      key_ids_.push_back(target.key_ids);
    }
    found_key_ids_.resize(targets.size());
    key_lookup_failed_.resize(targets.size(), false);
    if (std::ranges::any_of(targets, [](const auto& t) { return t.find_key; })) find_keys();
    if (!interrupted_.load()) head_and_revoke();
    if (!interrupted_.load()) revoke_found_keys();
    if (!interrupted_.load()) delete_buckets();
    if (!interrupted_.load()) delete_snapshots();
    return finish();
  }

 private:
  // Keys a stopped `fork create` may have minted without recording them: named
  // `<bucket>-key` with a role on that bucket (the IAM listing is paged by a marker).
  void find_keys() {
    std::map<std::string, std::size_t> wanted;
    for (std::size_t i = 0; i < plan_.targets.size(); ++i)
      if (plan_.targets[i].find_key) wanted.emplace(key_name_for(plan_.targets[i].bucket), i);
    std::string marker;
    do {
      const auto result = client_.send(iam::list_access_keys(marker));
      auto error = tigris::error_from_result(result, "ListAccessKeys");
      std::expected<iam::KeyPage, std::string> page = std::unexpected(std::string());
      if (!error) {
        page = iam::parse_key_list(*result);
        if (!page) error = Error{ErrorKind::other, "InvalidResponse", page.error(), 0, {}};
      }
      if (error) {
        // Without the listing a key may be left behind: say so on each fork concerned.
        // The bucket is kept too: once it is gone, a re-run could no longer tell its key.
        error->message = "could not look for unrecorded keys: " + error->message;
        for (const auto& [name, i] : wanted) {
          result_.forks[i].key = KeyOutcome::failed;
          result_.forks[i].error = *error;
          key_lookup_failed_[i] = true;
        }
        return;
      }
      for (const auto& key : page->keys) {
        const auto found = wanted.find(key.name);
        if (found == wanted.end()) continue;
        // Only a key shaped like the ones fork create mints: one role, on this bucket.
        const auto& bucket = plan_.targets[found->second].bucket;
        const bool scoped = key.buckets_role.size() == 1 && key.buckets_role[0].first == bucket;
        auto& ids = found_key_ids_[found->second];
        if (scoped && std::ranges::find(ids, key.id) == ids.end() &&
            std::ranges::find(key_ids_[found->second], key.id) == key_ids_[found->second].end())
          ids.push_back(key.id);
      }
      marker = page->marker;
    } while (!marker.empty() && !interrupted_.load());
  }

  // One batch: the safety HeadBucket of every fork, and the delete of every known key.
  void head_and_revoke() {
    struct Slot {
      std::size_t item;
      bool is_head;
    };
    std::vector<tigris::Operation> operations;
    std::vector<Slot> slots;
    for (std::size_t i = 0; i < plan_.targets.size(); ++i) {
      operations.push_back(tigris::head_bucket(plan_.targets[i].bucket));
      slots.push_back({i, true});
      for (const auto& id : key_ids_[i]) {
        operations.push_back(iam::delete_access_key(id));
        slots.push_back({i, false});
      }
    }
    if (operations.empty()) return;
    heads_.resize(plan_.targets.size());
    const auto results = client_.send_all(operations, plan_.concurrency);
    operations.clear();
    operations.shrink_to_fit();
    for (std::size_t k = 0; k < results.size(); ++k) {
      const auto& slot = slots[k];
      const auto& result = results[k];
      if (slot.is_head) {
        on_head(slot.item, result);
      } else {
        record_key_result(slot.item, result);
      }
    }
  }

  // Keys found by name rather than recorded in a manifest are revoked only once HeadBucket has
  // shown their bucket is one this teardown deletes, or is already gone: `plain-key` of a
  // bucket it refuses to touch is somebody else's key.
  void revoke_found_keys() {
    std::vector<tigris::Operation> operations;
    std::vector<std::size_t> items;
    auto targets = to_delete_;
    for (std::size_t i = 0; i < result_.forks.size(); ++i)
      if (result_.forks[i].status == BucketOutcome::already_gone) targets.push_back(i);
    for (auto i : targets) {
      for (const auto& id : found_key_ids_[i]) {
        operations.push_back(iam::delete_access_key(id));
        items.push_back(i);
      }
    }
    if (operations.empty()) return;
    const auto results = client_.send_all(operations, plan_.concurrency);
    for (std::size_t k = 0; k < results.size(); ++k)
      record_key_result(items[k], results[k]);
  }

  void record_key_result(std::size_t i, const http::Result& result) {
    auto& item = result_.forks[i];
    if (is_cancelled(result)) {
      item.key = merge_key(item.key, KeyOutcome::failed);
      if (!item.error) item.error = interrupted_error();
      return;
    }
    auto error = tigris::error_from_result(result, "DeleteAccessKey");
    if (!error) {
      item.key = merge_key(item.key, KeyOutcome::deleted);
    } else if (is_gone(*error)) {
      item.key = merge_key(item.key, KeyOutcome::already_gone);
    } else {
      item.key = merge_key(item.key, KeyOutcome::failed);
      if (!item.error) item.error = std::move(*error);
    }
  }

  void on_head(std::size_t i, const http::Result& result) {
    auto& item = result_.forks[i];
    const auto& target = plan_.targets[i];
    if (is_cancelled(result)) {
      item.status = BucketOutcome::failed;
      if (!item.error) item.error = interrupted_error();
      return;
    }
    auto error = tigris::error_from_result(result, "HeadBucket");
    if (error) {
      if (error->http_status == 404) {
        item.status = BucketOutcome::already_gone;
      } else {
        item.status = BucketOutcome::failed;
        error->message = target.bucket + ": " + error->message;
        if (!item.error) item.error = std::move(*error);
      }
      return;
    }
    heads_[i] = tigris::parse_head_bucket(*result);
    const auto& head = *heads_[i];
    if (!plan_.allow_non_fork) {
      // cli.md §5: never the source, never a bucket that is not a fork.
      if (!head.fork_source) {
        skip(item, "NotAFork",
             fmt::format("{} is not a fork (HeadBucket shows no X-Tigris-Fork-Source-Bucket); "
                         "not deleted (--allow-non-fork deletes it anyway)",
                         target.bucket));
        return;
      }
      if (!target.expected_source.empty() && *head.fork_source != target.expected_source) {
        skip(item, "ForkOfAnotherSource",
             fmt::format("{} is a fork of {}, not of {}; not deleted", target.bucket,
                         *head.fork_source, target.expected_source));
        return;
      }
    }
    if (key_lookup_failed_[i]) {
      item.status = BucketOutcome::failed;
      return;
    }
    to_delete_.push_back(i);
  }

  void skip(TeardownItem& item, std::string code, std::string message) {
    item.status = BucketOutcome::skipped;
    if (!item.error)
      item.error = Error{ErrorKind::conflict, std::move(code), std::move(message), 0, {}};
  }

  // Waves: a bucket goes only after every bucket of the set that was forked from it.
  std::vector<std::vector<std::size_t>> waves() const {
    std::map<std::string_view, std::size_t> by_name;
    for (auto i : to_delete_)
      by_name.emplace(plan_.targets[i].bucket, i);
    std::map<std::size_t, std::size_t> level;  // item -> wave
    // Walking up from each bucket, a parent's wave is at least one more than its child's.
    for (auto i : to_delete_)
      level.emplace(i, 0);
    for (auto i : to_delete_) {
      std::size_t child = i;
      for (std::size_t depth = 0; depth <= to_delete_.size(); ++depth) {
        const auto& source = heads_[child]->fork_source;
        if (!source) break;
        const auto parent = by_name.find(*source);
        if (parent == by_name.end()) break;
        if (level[parent->second] >= level[child] + 1) break;  // already ordered
        level[parent->second] = level[child] + 1;
        child = parent->second;
      }
    }
    std::vector<std::vector<std::size_t>> out;
    for (auto i : to_delete_) {
      if (out.size() <= level[i]) out.resize(level[i] + 1);
      out[level[i]].push_back(i);
    }
    return out;
  }

  void delete_buckets() {
    const auto order = waves();
    output::Progress progress("forks", to_delete_.size(), plan_.progress);
    for (std::size_t wave = 0; wave < order.size(); ++wave) {
      std::vector<std::size_t> pending = order[wave];
      for (int attempt = 0; !pending.empty(); ++attempt) {
        if (interrupted_.load()) break;
        std::vector<tigris::Operation> operations;
        for (auto i : pending)
          operations.push_back(tigris::delete_bucket(plan_.targets[i].bucket, true));
        const auto results = client_.send_all(operations, plan_.concurrency);
        std::vector<std::size_t> retry;
        for (std::size_t k = 0; k < results.size(); ++k) {
          auto& item = result_.forks[pending[k]];
          if (is_cancelled(results[k])) {
            item.status = BucketOutcome::failed;
            if (!item.error) item.error = interrupted_error();
            continue;
          }
          auto error = tigris::error_from_result(results[k], "DeleteBucket");
          if (error && error->http_status == 409 && wave > 0 &&
              attempt < k_parent_conflict_retries) {
            retry.push_back(pending[k]);
            continue;
          }
          if (!error) {
            item.status = BucketOutcome::deleted;
          } else if (is_gone(*error)) {
            item.status = BucketOutcome::already_gone;
          } else {
            item.status = BucketOutcome::failed;
            error->message = item.bucket + ": " + error->message;
            if (!item.error) item.error = std::move(*error);
          }
          progress.advance(item.status != BucketOutcome::failed);
        }
        if (!retry.empty()) std::this_thread::sleep_for(k_parent_conflict_delay * (1 << attempt));
        pending = std::move(retry);
      }
      if (interrupted_.load()) break;
    }
    progress.finish();
    for (auto i : to_delete_) {
      auto& item = result_.forks[i];
      if (interrupted_.load() && item.status == BucketOutcome::failed && !item.error)
        item.error = interrupted_error();
    }
  }

  void delete_snapshots() {
    if (plan_.snapshots.empty()) return;
    std::vector<tigris::Operation> operations;
    for (const auto& snapshot : plan_.snapshots) {
      operations.push_back(tigris::delete_snapshot(snapshot.bucket, snapshot.version));
      result_.snapshots.push_back(
          SnapshotItem{snapshot.bucket, snapshot.version, BucketOutcome::failed, std::nullopt});
    }
    const auto results = client_.send_all(operations, plan_.concurrency);
    for (std::size_t k = 0; k < results.size(); ++k) {
      auto& item = result_.snapshots[k];
      if (is_cancelled(results[k])) {
        item.error = interrupted_error();
        continue;
      }
      auto error = tigris::error_from_result(results[k], "DeleteBucketSnapshot");
      if (!error) {
        item.status = BucketOutcome::deleted;
      } else if (is_gone(*error)) {
        item.status = BucketOutcome::already_gone;
      } else {
        error->message =
            fmt::format("snapshot {} of {}: {}", item.version, item.bucket, error->message);
        item.error = std::move(*error);
      }
    }
  }

  TeardownResult finish() {
    std::vector<ItemOutcome> outcomes;
    std::optional<Error> first;
    std::size_t failed = 0;
    auto add = [&](bool ok, const std::optional<Error>& error) {
      if (ok) {
        outcomes.push_back({true, {}});
        return;
      }
      ++failed;
      const auto& e = error ? *error : Error{ErrorKind::other, "Failed", "failed", 0, {}};
      if (!first) first = e;
      outcomes.push_back({false, e.kind});
    };
    for (auto& item : result_.forks) {
      // A fork never reached (the run stopped before its head) is not done.
      if (interrupted_.load() && !item.error && item.status == BucketOutcome::failed)
        item.error = interrupted_error();
      const bool bucket_ok =
          item.status == BucketOutcome::deleted || item.status == BucketOutcome::already_gone;
      add(bucket_ok && item.key != KeyOutcome::failed, item.error);
    }
    for (const auto& item : result_.snapshots)
      add(item.status != BucketOutcome::failed, item.error);

    if (interrupted_.load()) {
      result_.exit_code = exit_code(ErrorKind::interrupted);
      result_.error = Error{ErrorKind::interrupted,
                            "Interrupted",
                            "interrupted; run the same teardown again to finish",
                            0,
                            {}};
    } else {
      result_.exit_code = batch_exit_code(outcomes);
      if (result_.exit_code == exit_code(ErrorKind::partial)) {
        result_.error = Error{ErrorKind::partial,
                              "PartialFailure",
                              fmt::format("{} of {} items could not be torn down (first: {})",
                                          failed, outcomes.size(), first->message),
                              0,
                              {}};
      } else if (result_.exit_code != 0) {
        result_.error = first;
      }
    }
    return std::move(result_);
  }

  tigris::Client& client_;
  const TeardownPlan& plan_;
  const std::atomic<bool>& interrupted_;
  TeardownResult result_;
  std::vector<std::vector<std::string>> key_ids_;        // recorded: revoked with the heads
  std::vector<std::vector<std::string>> found_key_ids_;  // found by name: after the heads
  std::vector<bool> key_lookup_failed_;                  // the bucket stays for a re-run
  std::vector<std::optional<tigris::BucketHead>> heads_;
  std::vector<std::size_t> to_delete_;
};

}  // namespace

TeardownPlan plan_from_manifests(const std::vector<Manifest>& manifests, bool delete_snapshot) {
  TeardownPlan plan;
  std::map<std::string, std::size_t> index;
  std::set<std::pair<std::string, std::string>> snapshots;
  for (const auto& manifest : manifests) {
    for (const auto& fork : manifest.forks) {
      if (!fork.may_exist() && fork.access_key_id.empty()) continue;
      auto [it, added] = index.emplace(fork.bucket, plan.targets.size());
      if (added) {
        TeardownTarget target;
        target.bucket = fork.bucket;
        target.expected_source = manifest.source;
        plan.targets.push_back(std::move(target));
      }
      auto& target = plan.targets[it->second];
      if (!fork.access_key_id.empty() &&
          std::ranges::find(target.key_ids, fork.access_key_id) == target.key_ids.end())
        target.key_ids.push_back(fork.access_key_id);
      if (fork.key_may_be_unrecorded()) target.find_key = true;
    }
    if (delete_snapshot && !manifest.snapshot.empty() &&
        snapshots.emplace(manifest.source, manifest.snapshot).second)
      plan.snapshots.push_back({manifest.source, manifest.snapshot});
  }
  return plan;
}

TeardownPlan plan_from_names(const std::vector<std::string>& names) {
  TeardownPlan plan;
  std::set<std::string_view> seen;
  for (const auto& name : names) {
    if (auto problem = tigris::bucket_name_problem(name))
      usage(fmt::format("invalid bucket name '{}': {}", name, *problem));
    if (!seen.insert(name).second) continue;
    TeardownTarget target;
    target.bucket = name;
    target.find_key = true;  // no manifest says which key it has: look up `<fork>-key`
    plan.targets.push_back(std::move(target));
  }
  return plan;
}

TeardownPlan plan_from_source(tigris::Client& client, const std::string& source,
                              const std::string& prefix) {
  if (auto problem = tigris::bucket_name_problem(source))
    usage(fmt::format("invalid source bucket name '{}': {}", source, *problem));
  if (prefix.empty()) usage("--source needs --prefix: say which of its forks to tear down");

  auto fetch = [&](const tigris::Operation& operation) {
    const auto result = client.send(operation);
    auto page = tigris::parse_bucket_list_json(tigris::expect_success(result, operation.name));
    if (!page) throw TforkError(ErrorKind::other, "InvalidResponse", page.error());
    return std::move(*page);
  };

  std::vector<std::string> names;
  // ListForks is answered in one page by servers that know X-Tigris-Fork; one that ignores the
  // header lists every bucket without ForkInfo, and then the full listing is filtered here.
  auto page = fetch(tigris::list_forks(source));
  const bool scoped = page.has_fork_info || page.buckets.empty();
  if (scoped) {
    while (true) {
      for (auto& entry : page.buckets)
        if ((!entry.source || *entry.source == source) && is_run_fork(entry.bucket, prefix))
          names.push_back(std::move(entry.bucket));
      if (page.continuation_token.empty()) break;
      auto next = tigris::list_forks(source);
      next.query.emplace_back("continuation-token", page.continuation_token);
      page = fetch(next);
    }
  } else {
    std::string token;
    do {
      page = fetch(tigris::list_buckets_with_fork_info(token));
      for (auto& entry : page.buckets)
        if (entry.source == source && is_run_fork(entry.bucket, prefix))
          names.push_back(std::move(entry.bucket));
      token = page.continuation_token;
    } while (!token.empty());
  }
  std::ranges::sort(names);
  names.erase(std::unique(names.begin(), names.end()), names.end());
  TeardownPlan plan;
  for (auto& name : names) {
    TeardownTarget target;
    target.bucket = std::move(name);
    target.expected_source = source;
    target.find_key = true;  // no manifest says which key it has: look up `<fork>-key`
    plan.targets.push_back(std::move(target));
  }
  return plan;
}

output::Json to_json(const TeardownResult& result) {
  output::Json forks = output::Json::array();
  for (const auto& item : result.forks) {
    forks.push_back(output::item_json(output::Json{{"bucket", item.bucket}}, item_status(item),
                                      output::Json{{"key", key_outcome_name(item.key)}}));
  }
  output::Json snapshots = output::Json::array();
  for (const auto& item : result.snapshots) {
    snapshots.push_back(output::item_json(
        output::Json{{"bucket", item.bucket}, {"version", item.version}}, item_status(item)));
  }
  return output::Json{{"forks", std::move(forks)}, {"snapshots", std::move(snapshots)}};
}

std::string to_table(const TeardownResult& result) {
  output::Table table({"BUCKET", "STATUS", "KEY", "ERROR"});
  for (const auto& item : result.forks)
    table.row({item.bucket, std::string(bucket_outcome_name(item.status)),
               std::string(key_outcome_name(item.key)),
               output::item_error_text(item_status(item))});
  for (const auto& item : result.snapshots)
    table.row({item.bucket + " @" + item.version, std::string(bucket_outcome_name(item.status)),
               "-", output::item_error_text(item_status(item))});
  return table.render("no forks to tear down\n");
}

std::vector<tigris::Operation> teardown_operations(const TeardownPlan& plan) {
  std::vector<tigris::Operation> operations;
  if (std::ranges::any_of(plan.targets, [](const auto& t) { return t.find_key; }))
    operations.push_back(iam::list_access_keys(""));
  for (const auto& target : plan.targets) {
    operations.push_back(tigris::head_bucket(target.bucket));
    for (const auto& id : target.key_ids)
      operations.push_back(iam::delete_access_key(id));
  }
  for (const auto& target : plan.targets)
    operations.push_back(tigris::delete_bucket(target.bucket, true));
  for (const auto& snapshot : plan.snapshots)
    operations.push_back(tigris::delete_snapshot(snapshot.bucket, snapshot.version));
  return operations;
}

TeardownResult run_teardown(tigris::Client& client, const TeardownPlan& plan,
                            const std::atomic<bool>& interrupted) {
  return TeardownRun(client, plan, interrupted).run();
}

}  // namespace tfork::workflow
