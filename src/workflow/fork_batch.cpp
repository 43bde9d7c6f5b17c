#include "tfork/workflow/fork_batch.hpp"

#include "tfork/output/progress.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/workflow/outcome.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <set>
#include <sys/stat.h>

namespace tfork::workflow {
namespace {

// Above this many forks a typo (-n 10000) is more likely than a plan.
constexpr int k_max_forks = 1000;
// Intermediate manifest rewrites while forks come in: pending entries already cover every
// fork that may exist, so these only keep the file informative, not consistent.
constexpr auto k_rewrite_interval = std::chrono::milliseconds(200);
constexpr auto k_key_rewrite_interval = std::chrono::milliseconds(50);
constexpr std::string_view k_version_placeholder = "<version from CreateBucketSnapshot>";

bool is_cancelled(const http::Result& result) {
  return !result && result.error().kind == http::TransportError::Kind::cancelled;
}

bool is_gone(const Error& error) {
  return error.http_status == 404 || error.code == "NoSuchEntity" || error.code == "NoSuchBucket";
}

Error interrupted_error() {
  return Error{ErrorKind::interrupted,
               "Interrupted",
               "interrupted; the manifest records every fork that may exist, and teardown "
               "--manifest removes them",
               0,
               {}};
}

class ForkRun {
 public:
  ForkRun(tigris::Client& client, const ForkCreatePlan& plan, const std::atomic<bool>& interrupted)
      : client_(client), plan_(plan), interrupted_(interrupted) {}

  ForkCreateOutcome run() {
    auto& m = outcome_.manifest;
    m.source = plan_.source;
    m.snapshot = plan_.snapshot;
    m.endpoint = client_.settings().endpoint;
    m.iam_endpoint = client_.settings().iam_endpoint;
    m.forks.reserve(plan_.names.size());
    for (const auto& name : plan_.names) {
      ManifestFork fork;
      fork.bucket = name;
      fork.role = plan_.role;
      m.forks.push_back(std::move(fork));
    }
    // Written before anything is sent: a manifest path that cannot be written fails the run
    // while nothing exists yet, and a kill at any later point leaves a superset on disk.
    save(false);

    if (m.snapshot.empty() && !take_snapshot()) return finish();
    if (interrupted_.load()) return finish_interrupted();
    create_forks();
    if (interrupted_.load()) return finish_interrupted();
    if (failed_any() && !plan_.keep_partial) return roll_back();
    if (plan_.role) {
      create_keys();
      if (interrupted_.load()) return finish_interrupted();
      if (failed_any() && !plan_.keep_partial) return roll_back();
    }
    if (failed_any()) {
      outcome_.exit_code = batch_exit_code(items());
      outcome_.error = first_error_;
    }
    return finish();
  }

 private:
  bool take_snapshot() {
    const auto result = client_.send(tigris::take_snapshot(plan_.source, plan_.snapshot_name));
    auto error = tigris::error_from_result(result, "CreateBucketSnapshot");
    std::optional<std::string> version;
    if (!error) {
      version = tigris::parse_snapshot_version(*result);
      took_snapshot_ = version.has_value();
      if (!version)
        error = Error{ErrorKind::other,
                      "MissingSnapshotVersion",
                      "CreateBucketSnapshot answered without X-Tigris-Snapshot-Version",
                      result->status,
                      {}};
    }
    if (error) {
      // No fork request was sent: every fork is `failed` with the reason.
      error->message = fmt::format("snapshot of {}: {}", plan_.source, error->message);
      for (auto& fork : outcome_.manifest.forks) {
        fork.status = ForkStatus::failed;
        fork.error = *error;
      }
      outcome_.exit_code = exit_code(error->kind);
      outcome_.error = std::move(error);
      return false;
    }
    outcome_.manifest.snapshot = *version;
    return true;
  }

  void create_forks() {
    auto& forks = outcome_.manifest.forks;
    std::vector<tigris::Operation> operations;
    operations.reserve(forks.size());
    for (const auto& fork : forks)
      operations.push_back(
          tigris::create_fork(fork.bucket, plan_.source, outcome_.manifest.snapshot));

    output::Progress progress("forks", forks.size(), plan_.progress);
    std::vector<std::size_t> conflicts;
    std::vector<Error> conflict_errors;
    std::vector<int> conflict_attempts;
    std::vector<bool> seen(forks.size(), false);
    auto on_done = [&](std::size_t i, const http::Result& result) {
      seen[i] = true;
      auto& fork = forks[i];
      if (is_cancelled(result)) return;  // stays pending: it may or may not exist
      auto error = tigris::error_from_result(result, "CreateBucketFork");
      if (!error) {
        fork.status = ForkStatus::created;
      } else if (result && result->status == 409 && (plan_.exist_ok || result->attempts > 1)) {
        // cli.md §4.7 and §7: decided after a HeadBucket of just these.
        conflicts.push_back(i);
        conflict_errors.push_back(*error);
        conflict_attempts.push_back(result->attempts);
      } else {
        fail(fork, std::move(*error));
      }
      progress.advance(!error);
      save_throttled();
    };
    const auto results = client_.send_all(operations, plan_.concurrency, on_done);
    operations.clear();
    operations.shrink_to_fit();
    for (std::size_t i = 0; i < results.size(); ++i)
      if (!seen[i]) on_done(i, results[i]);
    progress.finish();

    if (!conflicts.empty() && !interrupted_.load())
      resolve_conflicts(conflicts, conflict_errors, conflict_attempts);
    save(false);
  }

  void resolve_conflicts(const std::vector<std::size_t>& indices, std::vector<Error>& errors,
                         const std::vector<int>& attempts) {
    auto& forks = outcome_.manifest.forks;
    std::vector<tigris::Operation> heads;
    for (auto i : indices)
      heads.push_back(tigris::head_bucket(forks[i].bucket));
    const auto results = client_.send_all(heads, plan_.concurrency);
    for (std::size_t k = 0; k < indices.size(); ++k) {
      auto& fork = forks[indices[k]];
      if (is_cancelled(results[k])) continue;
      if (results[k] && results[k]->status / 100 == 2) {
        const auto head = tigris::parse_head_bucket(*results[k]);
        if (head.fork_source == plan_.source) {
          if (attempts[k] > 1 && head.fork_source_snapshot == outcome_.manifest.snapshot) {
            // Our own create got through before a retry (cli.md §7).
            fork.status = ForkStatus::created;
            continue;
          }
          if (plan_.exist_ok) {
            fork.status = ForkStatus::exists;
            continue;
          }
        }
      }
      fail(fork, std::move(errors[k]));
    }
  }

  void create_keys() {
    auto& forks = outcome_.manifest.forks;
    std::vector<std::size_t> indices;
    std::vector<tigris::Operation> operations;
    for (std::size_t i = 0; i < forks.size(); ++i) {
      const auto status = forks[i].status;
      if (status != ForkStatus::created && status != ForkStatus::exists) continue;
      indices.push_back(i);
      operations.push_back(iam::create_access_key(key_name_for(forks[i].bucket), forks[i].bucket,
                                                  *plan_.role, iam::new_uuid()));
    }
    if (operations.empty()) return;
    // Every fork is on disk with its final status before the first key request leaves.
    save(false);

    output::Progress progress("keys", operations.size(), plan_.progress);
    std::vector<bool> seen(operations.size(), false);
    auto on_done = [&](std::size_t k, const http::Result& result) {
      seen[k] = true;
      auto& fork = forks[indices[k]];
      if (is_cancelled(result)) return;  // a key may exist: teardown looks it up by name
      auto error = tigris::error_from_result(result, "CreateAccessKeyWithBucketsRole");
      if (!error) {
        auto key = iam::parse_created_key(*result);
        if (key) {
          fork.access_key_id = std::move(key->id);
          fork.secret_access_key = std::move(key->secret);
          progress.advance(true);
          // The secret exists only here, so it is written soon, but not once per key: each
          // rewrite replaces the manifest, and ext4 starts writeback on every such rename
          // (~1 ms each, 64 ms for 64 keys). A run killed in between still leaves nothing
          // teardown cannot remove: it finds an unrecorded key by its name `<fork>-key`.
          save_throttled(k_key_rewrite_interval);
          return;
        }
        error = Error{ErrorKind::other, "InvalidResponse", key.error(), result->status, {}};
      }
      fail_key(fork, std::move(*error));
      progress.advance(false);
    };
    const auto results = client_.send_all(operations, plan_.concurrency, on_done);
    operations.clear();
    for (std::size_t k = 0; k < results.size(); ++k)
      if (!seen[k]) on_done(k, results[k]);
    progress.finish();
  }

  ForkCreateOutcome roll_back() {
    auto& forks = outcome_.manifest.forks;
    const auto cause = first_error_;

    // Keys first (cli.md §4.5): every key in the manifest was minted by this run.
    std::vector<std::size_t> key_indices;
    std::vector<tigris::Operation> key_deletes;
    for (std::size_t i = 0; i < forks.size(); ++i) {
      if (forks[i].access_key_id.empty()) continue;
      key_indices.push_back(i);
      key_deletes.push_back(iam::delete_access_key(forks[i].access_key_id));
    }
    std::size_t keys_removed = 0;
    if (!key_deletes.empty()) {
      const auto results = client_.send_all(key_deletes, plan_.concurrency);
      for (std::size_t k = 0; k < results.size(); ++k) {
        auto& fork = forks[key_indices[k]];
        auto error = tigris::error_from_result(results[k], "DeleteAccessKey");
        if (!error || is_gone(*error)) {
          fork.access_key_id.clear();
          fork.secret_access_key.clear();
          ++keys_removed;
        } else {
          note_rollback_failure(fork, std::move(*error));
        }
      }
      save(false);
    }

    // A failed create that got no definite answer may have gone through: delete it only when
    // HeadBucket shows it is a fork of our source at our snapshot.
    std::vector<std::size_t> uncertain;
    for (std::size_t i = 0; i < forks.size(); ++i)
      if (forks[i].status == ForkStatus::failed && forks[i].may_exist()) uncertain.push_back(i);
    std::set<std::size_t> ours;
    if (!uncertain.empty() && !interrupted_.load()) {
      std::vector<tigris::Operation> heads;
      for (auto i : uncertain)
        heads.push_back(tigris::head_bucket(forks[i].bucket));
      const auto results = client_.send_all(heads, plan_.concurrency);
      for (std::size_t k = 0; k < uncertain.size(); ++k) {
        if (!results[k] || results[k]->status / 100 != 2) continue;
        const auto head = tigris::parse_head_bucket(*results[k]);
        if (head.fork_source == plan_.source &&
            head.fork_source_snapshot == outcome_.manifest.snapshot)
          ours.insert(uncertain[k]);
      }
    }

    // Then the forks this run created; adopted ones (`exists`) were not ours to delete.
    std::vector<std::size_t> fork_indices;
    std::vector<tigris::Operation> fork_deletes;
    for (std::size_t i = 0; i < forks.size(); ++i) {
      if (forks[i].status != ForkStatus::created && !ours.contains(i)) continue;
      fork_indices.push_back(i);
      fork_deletes.push_back(tigris::delete_bucket(forks[i].bucket, true));
    }
    std::size_t forks_removed = 0;
    if (!fork_deletes.empty() && !interrupted_.load()) {
      const auto results = client_.send_all(fork_deletes, plan_.concurrency);
      for (std::size_t k = 0; k < results.size(); ++k) {
        auto& fork = forks[fork_indices[k]];
        auto error = tigris::error_from_result(results[k], "DeleteBucket");
        if (!error || is_gone(*error)) {
          fork.status = ForkStatus::rolled_back;
          ++forks_removed;
        } else {
          note_rollback_failure(fork, std::move(*error));
        }
      }
    }
    if (interrupted_.load()) return finish_interrupted();

    // Last, the snapshot this run took (not one named by --snapshot): it pins object versions,
    // and no fork depends on a snapshot record (tigris-wire.md §2.5).
    bool snapshot_removed = false;
    if (took_snapshot_) {
      const auto result =
          client_.send(tigris::delete_snapshot(plan_.source, outcome_.manifest.snapshot));
      const auto error = tigris::error_from_result(result, "DeleteBucketSnapshot");
      snapshot_removed = !error || is_gone(*error);
      if (!snapshot_removed)
        spdlog::warn("could not delete snapshot {} of {}: {}", outcome_.manifest.snapshot,
                     plan_.source, error->message);
    }

    auto error = cause.value_or(Error{ErrorKind::other, "Failed", "fork create failed", 0, {}});
    error.message += fmt::format(
        "; rolled back {} fork{} and {} key{}{}", forks_removed, forks_removed == 1 ? "" : "s",
        keys_removed, keys_removed == 1 ? "" : "s", snapshot_removed ? " and the snapshot" : "");
    if (forks_removed < fork_indices.size() || keys_removed < key_indices.size())
      error.message += " (some could not be deleted: run teardown --manifest)";
    outcome_.exit_code = exit_code(error.kind);
    outcome_.error = std::move(error);
    return finish();
  }

  void fail(ManifestFork& fork, Error error) {
    error.message = fork.bucket + ": " + error.message;
    if (!first_error_) first_error_ = error;
    fork.status = ForkStatus::failed;
    fork.error = std::move(error);
  }

  void fail_key(ManifestFork& fork, Error error) {
    error.message = fork.bucket + ": " + error.message;
    if (!first_error_) first_error_ = error;
    fork.error = std::move(error);  // the fork itself exists: its status stays
  }

  void note_rollback_failure(ManifestFork& fork, Error error) {
    error.message = fork.bucket + ": rollback failed: " + error.message;
    spdlog::warn("{}", error.message);
    fork.error = std::move(error);
  }

  bool failed_any() const { return first_error_.has_value(); }

  std::vector<ItemOutcome> items() const {
    std::vector<ItemOutcome> out;
    for (const auto& fork : outcome_.manifest.forks)
      out.push_back(fork.error ? ItemOutcome{false, fork.error->kind} : ItemOutcome{true, {}});
    return out;
  }

  ForkCreateOutcome finish_interrupted() {
    outcome_.exit_code = exit_code(ErrorKind::interrupted);
    outcome_.error = interrupted_error();
    return finish();
  }

  ForkCreateOutcome finish() {
    save(true);
    return std::move(outcome_);
  }

  void save(bool durable) {
    if (!plan_.manifest_path) return;
    write_manifest(*plan_.manifest_path, outcome_.manifest, durable);
    last_write_ = std::chrono::steady_clock::now();
  }

  void save_throttled(std::chrono::milliseconds interval = k_rewrite_interval) {
    if (std::chrono::steady_clock::now() - last_write_ >= interval) save(false);
  }

  tigris::Client& client_;
  const ForkCreatePlan& plan_;
  const std::atomic<bool>& interrupted_;
  ForkCreateOutcome outcome_;
  std::optional<Error> first_error_;
  bool took_snapshot_ = false;  // this run took the snapshot (no --snapshot): rollback removes it
  std::chrono::steady_clock::time_point last_write_{};
};

[[noreturn]] void usage(const std::string& message) {
  throw TforkError(ErrorKind::usage, "UsageError", message);
}

}  // namespace

ForkCreatePlan plan_fork_create(const ForkCreateRequest& request, std::int64_t now_ms) {
  if (auto problem = tigris::bucket_name_problem(request.source))
    usage(fmt::format("invalid source bucket name '{}': {}", request.source, *problem));

  ForkCreatePlan plan;
  plan.source = request.source;
  if (request.count != 0 && !request.names.empty())
    usage("give either -n N or fork names, not both");
  if (!request.names.empty() && !request.prefix.empty())
    usage("--prefix only applies with -n N (the fork names were given)");
  std::string prefix = request.prefix;
  if (prefix.empty()) prefix = fmt::format("{}-fork-{}", request.source, now_ms);
  if (!request.names.empty()) {
    plan.names = request.names;
  } else {
    if (request.count < 1) usage("say how many forks to create with -n N, or name them");
    if (request.count > k_max_forks)
      usage(fmt::format("-n {} is more than the {} forks one run may create", request.count,
                        k_max_forks));
    plan.names.reserve(static_cast<std::size_t>(request.count));
    for (int i = 1; i <= request.count; ++i)
      plan.names.push_back(fmt::format("{}-{}", prefix, i));
  }
  std::set<std::string_view> unique;
  for (const auto& name : plan.names) {
    if (auto problem = tigris::bucket_name_problem(name))
      usage(fmt::format("invalid fork name '{}': {}", name, *problem));
    if (name == request.source) usage(fmt::format("fork name '{}' is the source itself", name));
    if (!unique.insert(name).second) usage(fmt::format("fork name '{}' is given twice", name));
  }

  if (!request.snapshot.empty()) {
    if (!tigris::is_snapshot_version(request.snapshot))
      usage(
          fmt::format("invalid --snapshot '{}': a snapshot version is a decimal nanosecond "
                      "timestamp such as 1751631910196672425",
                      request.snapshot));
    if (request.snapshot_name)
      usage("--snapshot-name names the snapshot fork create takes; it cannot rename --snapshot");
    plan.snapshot = request.snapshot;
  } else {
    plan.snapshot_name = request.snapshot_name.value_or("tfork " + prefix);
    if (auto problem = tigris::snapshot_name_problem(*plan.snapshot_name))
      usage(fmt::format("invalid --snapshot-name '{}': {}", *plan.snapshot_name, *problem));
  }

  if (request.keys == "editor")
    plan.role = iam::Role::editor;
  else if (request.keys == "readonly")
    plan.role = iam::Role::read_only;
  else if (request.keys == "none")
    plan.role = std::nullopt;
  else
    usage(fmt::format("--keys must be editor, readonly or none, got '{}'", request.keys));

  if (request.concurrency < 1) usage("--concurrency must be at least 1");
  plan.concurrency = static_cast<std::size_t>(request.concurrency);
  plan.keep_partial = request.keep_partial;
  plan.exist_ok = request.exist_ok;

  if (request.manifest_path) {
    // An earlier run's manifest may be the only record of forks and keys still alive.
    struct stat info {};
    if (::stat(request.manifest_path->c_str(), &info) == 0 && info.st_size > 0 &&
        !request.overwrite_manifest)
      usage(
          fmt::format("manifest {} already exists and may record forks that still need "
                      "teardown; remove it or pass --yes to overwrite it",
                      request.manifest_path->string()));
    if (::stat(request.manifest_path->c_str(), &info) == 0 && S_ISDIR(info.st_mode))
      usage(fmt::format("manifest {} is a directory", request.manifest_path->string()));
    plan.manifest_path = request.manifest_path;
  }
  return plan;
}

std::vector<tigris::Operation> fork_create_operations(const ForkCreatePlan& plan) {
  std::vector<tigris::Operation> operations;
  std::string version = plan.snapshot;
  if (version.empty()) {
    operations.push_back(tigris::take_snapshot(plan.source, plan.snapshot_name));
    version = k_version_placeholder;
  }
  for (const auto& name : plan.names)
    operations.push_back(tigris::create_fork(name, plan.source, version));
  if (plan.role)
    for (const auto& name : plan.names)
      operations.push_back(
          iam::create_access_key(key_name_for(name), name, *plan.role, iam::new_uuid()));
  return operations;
}

ForkCreateOutcome run_fork_create(tigris::Client& client, const ForkCreatePlan& plan,
                                  const std::atomic<bool>& interrupted) {
  return ForkRun(client, plan, interrupted).run();
}

}  // namespace tfork::workflow
