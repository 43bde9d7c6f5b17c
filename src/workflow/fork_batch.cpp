// SPDX-License-Identifier: Apache-2.0
#include "tfork/workflow/fork_batch.hpp"

#include "tfork/rules/snapshot_name.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/workflow/send_once.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <functional>
#include <set>
#include <sys/stat.h>

namespace tfork::workflow {
namespace {

using output::Status;

// Intermediate manifest rewrites while forks come in: pending entries already cover every
// fork that may exist, and teardown finds a key the file does not record yet by its name, so
// these only keep the file informative, not consistent. At most one a second, and never more
// than a tenth of the run's time: each rewrite serialises the whole manifest (some 30 million
// instructions for 1,000 forks, a fifth of such a run's CPU when it was five a second) and
// renames it, which starts the file system's writeback.
constexpr auto k_rewrite_interval = std::chrono::seconds(1);
constexpr int k_rewrite_share = 10;
constexpr std::string_view k_version_placeholder = "<version from CreateBucketSnapshot>";
// A 409'd create that HeadBucket does not show yet is asked about again this many times, this
// far apart, before it counts as a conflict.
constexpr Backoff k_invisible_fork{std::chrono::milliseconds(250), std::chrono::milliseconds(250),
                                   21, std::chrono::hours(1)};
constexpr std::string_view k_interrupted =
    "the manifest records every fork that may exist, and teardown --manifest removes them";

// The 409 codes that say the name belongs to a bucket that was there before our create.
bool names_taken(std::string_view code) {
  return code == "BucketAlreadyExists" || code == "BucketAlreadyOwnedByYou";
}

class ForkRun {
 public:
  ForkRun(tigris::Client& client, const ForkCreatePlan& plan, const BatchSettings& settings)
      : runner_(client, settings), plan_(plan) {}

  ForkCreateOutcome run() {
    auto& m = outcome_.manifest;
    m.source = plan_.source;
    m.snapshot = plan_.snapshot;
    m.endpoint = client().settings().endpoint;
    m.iam_endpoint = client().settings().iam_endpoint;
    m.forks.reserve(plan_.names.size());
    for (const auto& name : plan_.names) {
      ManifestFork fork;
      fork.bucket = name;
      fork.role = plan_.role;
      m.forks.push_back(std::move(fork));
    }
    if (plan_.adopted) {
      // The adopted run's snapshot stays what it was; its other forks stay on record.
      m.snapshot_taken = plan_.adopted->snapshot_taken && m.snapshot == plan_.adopted->snapshot;
      m.snapshot_name = plan_.adopted->snapshot_name;
      if (m.snapshot == plan_.adopted->snapshot) m.expires_at = plan_.adopted->expires_at;
      for (const auto& fork : plan_.adopted->forks) {
        if (std::ranges::find(plan_.names, fork.bucket) == plan_.names.end()) {
          m.forks.push_back(fork);
          continue;
        }
        // A fork of this run the adopted manifest already keys: its key is kept on record, and
        // reused if the fork is still there (issue 21 §2: never a second key for one fork).
        if (fork.access_key_id.empty() || fork.key_revoked || fork.secret_access_key.empty())
          continue;
        auto& ours = *std::ranges::find(m.forks, fork.bucket, &ManifestFork::bucket);
        if (ours.role != fork.role) continue;  // another role asked: a new key for it
        ours.access_key_id = fork.access_key_id;
        ours.secret_access_key = fork.secret_access_key;
      }
    }
    own_forks_ = plan_.names.size();
    // cli.md §4.8: --snapshot NAME|VERSION is settled before anything is written or made.
    if (!resolve_snapshot()) return std::move(outcome_);
    if (m.snapshot.empty()) {
      m.snapshot_name = plan_.snapshot_name.value_or("");
      if (plan_.expires_at) m.expires_at = plan_.expires_at;
    }
    // Written before anything is sent: a manifest path that cannot be written fails the run
    // while nothing exists yet, and a kill at any later point leaves a superset on disk.
    save(false);

    if (m.snapshot.empty() && !take_snapshot()) return end_run();
    if (runner_.interrupted()) return end_interrupted();
    make_forks();
    if (runner_.interrupted()) return end_interrupted();
    say_shared_cause_once();
    if (failed_any() && !plan_.keep_partial) return roll_back();
    if (failed_any()) outcome_.error = batch_error(tally(), {"forks", "fork", "failed"});
    return end_run();
  }

 private:
  tigris::Client& client() { return runner_.client(); }

  // --snapshot NAME → its newest version; --snapshot VERSION → must be listed (unless
  // --any-version). False (the outcome says why, exit 3) when it cannot be resolved.
  bool resolve_snapshot() {
    if (plan_.snapshot_lookup.empty() && (plan_.snapshot.empty() || plan_.any_version)) return true;
    if (plan_.adopted && plan_.snapshot_lookup.empty() && plan_.snapshot == plan_.adopted->snapshot)
      return true;  // the adopted run's own snapshot
    std::vector<tigris::Snapshot> snapshots;
    try {
      snapshots = tigris::list_all_snapshots(client(), plan_.source);
    } catch (const TforkError& e) {
      return fail_before_start(e.error());
    }
    if (!plan_.snapshot_lookup.empty()) {
      std::vector<const tigris::Snapshot*> named;
      for (const auto& snapshot : snapshots)
        if (snapshot.name == plan_.snapshot_lookup) named.push_back(&snapshot);
      if (named.empty()) {
        return fail_before_start(
            Error{ErrorKind::not_found,
                  "NoSuchSnapshot",
                  fmt::format("{} has no snapshot named '{}' (tfork snapshot ls {} lists them)",
                              plan_.source, output::printable(plan_.snapshot_lookup), plan_.source),
                  0,
                  {}});
      }
      const auto newest = std::ranges::max_element(named, [](const auto* a, const auto* b) {
        return a->version.size() != b->version.size() ? a->version.size() < b->version.size()
                                                      : a->version < b->version;
      });
      outcome_.manifest.snapshot = (*newest)->version;
      if (named.size() > 1) {
        spdlog::warn("{} snapshots of {} are named '{}'; using the newest, {}", named.size(),
                     plan_.source, output::printable(plan_.snapshot_lookup),
                     outcome_.manifest.snapshot);
      } else {
        spdlog::info("snapshot '{}' of {} is version {}", output::printable(plan_.snapshot_lookup),
                     plan_.source, outcome_.manifest.snapshot);
      }
      return true;
    }
    if (std::ranges::any_of(snapshots, [&](const auto& s) { return s.version == plan_.snapshot; }))
      return true;
    return fail_before_start(
        Error{ErrorKind::not_found,
              "NoSuchSnapshot",
              fmt::format("snapshot {} is not listed for {} (tfork snapshot ls {} lists them; "
                          "--any-version forks any point in time)",
                          plan_.snapshot, plan_.source, plan_.source),
              0,
              {}});
  }

  // Nothing was sent that makes anything: the cause is the run's one error (said once, issue
  // 26 §3), every fork `not-attempted`, and no manifest is written (nothing to tear down).
  bool fail_before_start(Error error) {
    for (std::size_t i = 0; i < own_forks_; ++i)
      outcome_.manifest.forks[i].status = Status::not_attempted;
    outcome_.error = std::move(error);
    return false;
  }

  bool take_snapshot() {
    const auto result = send_take_snapshot(client(), plan_.source, plan_.snapshot_name);
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
      // No fork request was sent: one error for the run, every fork `not-attempted`.
      error->message = fmt::format("snapshot of {} failed: {}", plan_.source, error->message);
      if (auto why = explain_snapshot_failure(*error)) error->message += "; " + *why;
      for (auto& fork : outcome_.manifest.forks)
        fork.status = Status::not_attempted;
      outcome_.error = std::move(error);
      return false;
    }
    outcome_.manifest.snapshot = *version;
    outcome_.manifest.snapshot_taken = true;
    spdlog::info("took snapshot {} of {} (named '{}')", *version, plan_.source,
                 output::printable(plan_.snapshot_name.value_or("")));
    save(false);  // the version, before any fork depends on it
    return true;
  }

  // What to do about a refused snapshot, from a HeadBucket of the source: turn snapshots on
  // (the usual cause), or the source is not there.
  std::optional<std::string> explain_snapshot_failure(const Error& error) {
    if (error.http_status != 400 && error.http_status != 404 && error.http_status != 409)
      return std::nullopt;
    const auto head = client().send(tigris::head_bucket(plan_.source));
    if (head && head->status == 404) return fmt::format("there is no bucket {}", plan_.source);
    if (!head || head->status / 100 != 2) return std::nullopt;
    if (tigris::parse_head_bucket(*head).snapshots_enabled) return std::nullopt;
    return fmt::format(
        "{} does not have snapshots enabled; turn them on with: tfork bucket set {} "
        "--snapshots on",
        plan_.source, plan_.source);
  }

  // Why a fork's name is taken, in words, from its HeadBucket: what it is, and what to do.
  std::string name_taken_message(const tigris::BucketHead& head) const {
    const auto& snapshot = outcome_.manifest.snapshot;
    if (head.fork_source == plan_.source && head.fork_source_snapshot == snapshot)
      return fmt::format(
          "exists, as a fork of {} from this run's snapshot {}; pass --exist-ok to "
          "adopt it, or choose another name or --prefix",
          plan_.source, snapshot);
    if (head.fork_source == plan_.source)
      return fmt::format(
          "exists, as a fork of {} from snapshot {} (this run forks {}); choose "
          "another name or --prefix, or tear it down first",
          plan_.source, head.fork_source_snapshot.value_or("(unknown)"), snapshot);
    if (head.fork_source)
      return fmt::format("exists, as a fork of {}, not of {}; choose another name or --prefix",
                         *head.fork_source, plan_.source);
    return fmt::format("exists and is not a fork of {}; choose another name or --prefix",
                       plan_.source);
  }

  // ---- the forks: one item each, CreateBucketFork → (HeadBucket) → its key

  enum class Step { create, check, revoke_stale, key };
  struct ForkState {
    Step step = Step::create;
    bool key_reused = false;  // the adopted manifest's key, kept: not this run's to roll back
    Error conflict;           // the 409 of the create, while HeadBucket decides what it means
    bool retried = false;     // the create was sent more than once: a 409 may be our own fork
    int checks = 0;           // HeadBuckets sent for it
  };

  void make_forks() {
    auto& forks = outcome_.manifest.forks;
    std::vector<tigris::Operation> creates;
    creates.reserve(own_forks_);
    for (std::size_t i = 0; i < own_forks_; ++i)
      creates.push_back(
          tigris::create_fork(forks[i].bucket, plan_.source, outcome_.manifest.snapshot));
    states_.assign(own_forks_, ForkState{});
    auto phase = runner_.phase("forks", own_forks_);
    const auto results =
        runner_.run(&phase, std::move(creates),
                    [this](std::size_t i, const http::Result& answer) { return judge(i, answer); });
    for (std::size_t i = 0; i < own_forks_; ++i) {
      // A stopped run never sent these: they cannot exist. An interrupted one may have, so they
      // stay pending (teardown --manifest finds what there is).
      if (!results[i].sent && !runner_.interrupted()) forks[i].status = Status::not_attempted;
    }
  }

  Verdict judge(std::size_t i, const http::Result& answer) {
    switch (states_[i].step) {
      case Step::create:
        return judge_create(i, answer);
      case Step::check:
        return judge_check(i, answer);
      case Step::revoke_stale:
        return judge_stale_key(i, answer);
      case Step::key:
        return judge_key(i, answer);
    }
    return Verdict::done(Status::failed);
  }

  Verdict judge_create(std::size_t i, const http::Result& answer) {
    auto& fork = outcome_.manifest.forks[i];
    auto error = tigris::error_from_result(answer, "CreateBucketFork");
    if (!error) {
      fork.status = Status::created;
      save_throttled();
      return key_step(i);
    }
    if (answer && answer->status == 409) {
      // cli.md §4.7 and §7, issue 7 §5: decided after a HeadBucket (a gateway may answer 409
      // to a create of ours that went through).
      auto& state = states_[i];
      state.step = Step::check;
      state.conflict = std::move(*error);
      state.retried = answer->attempts > 1;
      state.checks = 1;
      return Verdict::then(tigris::head_bucket(fork.bucket));
    }
    return mark_failed(fork, std::move(*error));
  }

  Verdict judge_check(std::size_t i, const http::Result& answer) {
    auto& fork = outcome_.manifest.forks[i];
    auto& state = states_[i];
    const auto& snapshot = outcome_.manifest.snapshot;
    // A 409 that is not "the name is taken" (OperationAborted and the like), or one after a
    // retry, may be our own create: the fork may not be visible yet, so a 404 is asked again
    // for a while (a consistency delay, tigris-wire §2.6) before it counts as a conflict.
    const bool maybe_ours = state.retried || !names_taken(state.conflict.code);
    if (!answer || answer->status / 100 != 2) {
      if (answer && answer->status == 404 && maybe_ours) {
        if (const auto wait = k_invisible_fork.wait(state.checks, started_)) {
          ++state.checks;
          return Verdict::then(tigris::head_bucket(fork.bucket), *wait);
        }
      }
      return mark_failed(fork, std::move(state.conflict));
    }
    const auto head = tigris::parse_head_bucket(*answer);
    const bool same_source = head.fork_source == plan_.source;
    const bool same_snapshot = same_source && head.fork_source_snapshot == snapshot;
    if (same_snapshot && maybe_ours) {
      fork.status = Status::created;
    } else if (same_snapshot && plan_.exist_ok) {
      fork.status = Status::exists;
    } else if (same_source && plan_.exist_ok) {
      // cli.md §4.7: another snapshot's fork would show the agent other data.
      return mark_failed(
          fork,
          Error{ErrorKind::conflict, "ForkSnapshotMismatch",
                fmt::format("exists as a fork of {} from snapshot {}, but this run "
                            "forks snapshot {}; not adopted",
                            plan_.source, head.fork_source_snapshot.value_or("(none)"), snapshot),
                409, state.conflict.request_id});
    } else {
      // Taken by something this run may not adopt: say what it is and what to do.
      auto error = std::move(state.conflict);
      if (names_taken(error.code) || same_source) error.message = name_taken_message(head);
      return mark_failed(fork, std::move(error));
    }
    save_throttled();
    return key_step(i);
  }

  // The fork exists: its key next (cli.md §4.3), or it is done without one (--keys none).
  Verdict key_step(std::size_t i) {
    auto& fork = outcome_.manifest.forks[i];
    if (!plan_.role) return Verdict::done(fork.status);
    // An adopted fork that is still there keeps the key its manifest recorded; a fork made
    // anew gets a new key (the old one's grant went with the old bucket).
    if (!fork.access_key_id.empty() && fork.status == Status::exists) {
      states_[i].key_reused = true;
      return Verdict::done(fork.status);
    }
    if (!fork.access_key_id.empty()) {
      states_[i].step = Step::revoke_stale;
      return Verdict::then(iam::delete_access_key(fork.access_key_id));
    }
    return mint_key(i);
  }

  // The adopted key of a fork made anew is revoked before the new one is minted, so that the
  // manifest never forgets a live key.
  Verdict judge_stale_key(std::size_t i, const http::Result& answer) {
    auto& fork = outcome_.manifest.forks[i];
    auto error = tigris::error_from_result(answer, "DeleteAccessKey");
    if (error && !key_gone(*error)) {
      error->message = fmt::format("{}: its earlier key {} could not be revoked: {}", fork.bucket,
                                   fork.access_key_id, error->message);
      note_failure(*error);
      fork.error = std::move(*error);
      return Verdict::done(Status::failed, fork.error);
    }
    fork.access_key_id.clear();
    fork.secret_access_key.clear();
    return mint_key(i);
  }

  Verdict mint_key(std::size_t i) {
    const auto& fork = outcome_.manifest.forks[i];
    states_[i].step = Step::key;
    // If the run dies before the answer, teardown finds the key by this name (the manifest
    // may not have the fork's id yet: ManifestFork::key_may_be_unrecorded).
    return Verdict::then(iam::create_access_key(key_name_for(fork.bucket), fork.bucket, *plan_.role,
                                                iam::new_uuid()));
  }

  Verdict judge_key(std::size_t i, const http::Result& answer) {
    auto& fork = outcome_.manifest.forks[i];
    auto error = tigris::error_from_result(answer, "CreateAccessKeyWithBucketsRole");
    if (!error) {
      auto key = iam::parse_created_key(*answer);
      if (key) {
        fork.access_key_id = std::move(key->id);
        fork.secret_access_key = std::move(key->secret);
        // The secret exists only here, so it is written soon, but not once per key (see
        // k_rewrite_interval). A run killed in between still leaves nothing teardown cannot
        // remove: it finds an unrecorded key by its name `<fork>-key`.
        save_throttled();
        return Verdict::done(fork.status);
      }
      error = Error{ErrorKind::other, "InvalidResponse", key.error(), answer->status, {}};
    }
    // The fork itself exists: its status stays, with the key's error.
    error->message = fork.bucket + ": " + error->message;
    note_failure(*error);
    fork.error = std::move(*error);
    return Verdict::done(Status::failed, fork.error);
  }

  // The fork failed: recorded, and (unless --keep-partial) nothing more is sent, since the
  // run rolls back.
  Verdict mark_failed(ManifestFork& fork, Error error) {
    error.message = fork.bucket + ": " + error.message;
    note_failure(error);
    fork.status = Status::failed;
    fork.error = std::move(error);
    return Verdict::done(Status::failed, fork.error);
  }

  void note_failure(const Error& error) {
    if (!first_error_) first_error_ = error;
    // A cause the other forks would meet too (the IAM endpoint unreachable) stops the run even
    // with --keep-partial: what was not sent stays not-attempted.
    if (!plan_.keep_partial || is_systemic(error)) runner_.stop();
  }

  // Forks that all failed for one cause say it once, in the run's error (issue 26 §3).
  void say_shared_cause_once() {
    auto& forks = outcome_.manifest.forks;
    std::vector<std::optional<Error>*> errors;
    std::vector<std::string> names;
    for (std::size_t i = 0; i < own_forks_; ++i) {
      errors.push_back(&forks[i].error);
      names.push_back(forks[i].bucket);
    }
    const auto failed = std::ranges::count_if(errors, [](auto* e) { return e->has_value(); });
    auto cause = take_shared_cause(errors, names);
    if (!cause) return;
    shared_failures_ = static_cast<std::size_t>(failed);
    first_error_ = cause;
    if (failed > 1)
      first_error_->message = fmt::format("{} forks failed alike: {}", failed, cause->message);
    shared_cause_ = std::move(cause);
  }

  // ---- rollback (cli.md §4.5): keys, then forks, then the snapshot this run took

  ForkCreateOutcome roll_back() {
    auto& forks = outcome_.manifest.forks;
    const auto cause = first_error_;
    spdlog::info("rolling back what this run made (keys, then forks, then its snapshot): {}",
                 cause ? output::printable(cause->message) : std::string("a fork failed"));

    // Keys first: every key in the manifest was minted by this run.
    std::vector<std::size_t> key_indices;
    std::vector<tigris::Operation> key_deletes;
    for (std::size_t i = 0; i < own_forks_; ++i) {
      if (forks[i].access_key_id.empty() || states_[i].key_reused) continue;
      key_indices.push_back(i);
      key_deletes.push_back(iam::delete_access_key(forks[i].access_key_id));
    }
    const auto keys_removed = remove_all("rollback of keys", key_indices, std::move(key_deletes),
                                         "DeleteAccessKey", key_gone, [](ManifestFork& fork) {
                                           fork.access_key_id.clear();
                                           fork.secret_access_key.clear();
                                         });
    if (!key_indices.empty()) save(false);

    // A failed create that got no definite answer may have gone through: delete it only when
    // HeadBucket shows it is a fork of our source at our snapshot.
    std::vector<std::size_t> uncertain;
    // A fork the run stopped before deciding (pending) may exist too.
    for (std::size_t i = 0; i < own_forks_; ++i)
      if ((forks[i].status == Status::failed && forks[i].may_exist()) ||
          forks[i].status == Status::pending)
        uncertain.push_back(i);
    std::set<std::size_t> ours;
    std::vector<tigris::Operation> heads;
    for (auto i : uncertain)
      heads.push_back(tigris::head_bucket(forks[i].bucket));
    runner_.run(nullptr, std::move(heads), [&](std::size_t k, const http::Result& answer) {
      if (answer && answer->status / 100 == 2) {
        const auto head = tigris::parse_head_bucket(*answer);
        if (head.fork_source == plan_.source &&
            head.fork_source_snapshot == outcome_.manifest.snapshot)
          ours.insert(uncertain[k]);
      }
      return Verdict::done(Status::skipped);
    });

    // Then the forks this run created; adopted ones (`exists`) were not ours to delete.
    std::vector<std::size_t> fork_indices;
    std::vector<tigris::Operation> fork_deletes;
    for (std::size_t i = 0; i < own_forks_; ++i) {
      if (forks[i].status != Status::created && !ours.contains(i)) continue;
      fork_indices.push_back(i);
      fork_deletes.push_back(tigris::delete_bucket(forks[i].bucket, true));
    }
    const auto forks_to_remove = fork_indices.size();
    const auto forks_removed =
        remove_all("rollback of forks", fork_indices, std::move(fork_deletes), "DeleteBucket",
                   bucket_gone, [](ManifestFork& fork) { fork.status = Status::rolled_back; });
    if (runner_.interrupted()) return end_interrupted();

    // Last, the snapshot this run took (not one named by --snapshot): it pins object versions,
    // and no fork depends on a snapshot record (tigris-wire.md §2.5).
    bool snapshot_removed = false;
    if (took_snapshot_) {
      const auto result =
          client().send(tigris::delete_snapshot(plan_.source, outcome_.manifest.snapshot));
      const auto error = tigris::error_from_result(result, "DeleteBucketSnapshot");
      snapshot_removed = !error || snapshot_gone(*error);
      snapshot_left_ = !snapshot_removed;
      if (!snapshot_removed)
        spdlog::warn("could not delete snapshot {} of {}: {}", outcome_.manifest.snapshot,
                     plan_.source, error->message);
    }

    auto error = cause.value_or(Error{ErrorKind::other, "Failed", "fork create failed", 0, {}});
    error.message += fmt::format(
        "; rolled back {} fork{} and {} key{}{}", forks_removed, forks_removed == 1 ? "" : "s",
        keys_removed, keys_removed == 1 ? "" : "s", snapshot_removed ? " and the snapshot" : "");
    if (forks_removed < forks_to_remove || keys_removed < key_indices.size())
      error.message += " (some could not be deleted: run teardown --manifest)";
    outcome_.error = std::move(error);
    return end_run();
  }

  // Sends `deletes` (one for each fork of `indices`) as the phase `phase`: an answer that says
  // the thing is gone (or was already) calls `removed` on its fork; a failure stays on the fork
  // and is logged. Returns how many went.
  std::size_t remove_all(std::string phase_name, const std::vector<std::size_t>& indices,
                         std::vector<tigris::Operation> deletes, std::string_view operation,
                         bool (*gone)(const Error&),
                         const std::function<void(ManifestFork&)>& removed) {
    auto& forks = outcome_.manifest.forks;
    std::size_t count = 0;
    auto phase = runner_.phase(std::move(phase_name), deletes.size());
    runner_.run(
        &phase, std::move(deletes),
        [&](std::size_t k, const http::Result& answer) {
          auto& fork = forks[indices[k]];
          auto error = tigris::error_from_result(answer, operation);
          if (error && !gone(*error)) {
            error->message = fork.bucket + ": rollback failed: " + error->message;
            spdlog::warn("{}", error->message);
            fork.error = error;
            return Verdict::done(Status::failed, std::move(error));
          }
          removed(fork);
          ++count;
          return Verdict::done(Status::deleted);
        },
        names_of(indices));
    return count;
  }

  std::vector<std::string> names_of(const std::vector<std::size_t>& indices) const {
    std::vector<std::string> names;
    for (auto i : indices)
      names.push_back(outcome_.manifest.forks[i].bucket);
    return names;
  }

  // ---- the outcome

  bool failed_any() const { return first_error_.has_value(); }

  BatchTally tally() const {
    BatchTally counted;
    counted.total = own_forks_;
    for (std::size_t i = 0; i < own_forks_; ++i)
      if (const auto& error = outcome_.manifest.forks[i].error) counted.failures.push_back(&*error);
    for (std::size_t i = 0; i < shared_failures_; ++i)
      counted.failures.push_back(&*shared_cause_);
    return counted;
  }

  ForkCreateOutcome end_interrupted() {
    outcome_.error = interrupted_error(k_interrupted);
    return end_run();
  }

  ForkCreateOutcome end_run() {
    if (!plan_.manifest_path) {
      outcome_.manifest_kept = false;
    } else if (plan_.manifest_defaulted && !runner_.interrupted() &&
               !records_live_resources(outcome_.manifest) && !snapshot_left_) {
      std::error_code ignored;
      std::filesystem::remove(*plan_.manifest_path, ignored);
      outcome_.manifest_kept = false;
    } else {
      save(true);
    }
    return std::move(outcome_);
  }

  void save(bool durable) {
    if (!plan_.manifest_path) return;
    const auto start = std::chrono::steady_clock::now();
    write_manifest(*plan_.manifest_path, outcome_.manifest, durable);
    last_write_ = std::chrono::steady_clock::now();
    last_write_took_ = last_write_ - start;
  }

  void save_throttled() {
    const auto wait = std::max<std::chrono::steady_clock::duration>(
        k_rewrite_interval, last_write_took_ * k_rewrite_share);
    if (std::chrono::steady_clock::now() - last_write_ >= wait) save(false);
  }

  BatchRunner runner_;
  const ForkCreatePlan& plan_;
  ForkCreateOutcome outcome_;
  std::vector<ForkState> states_;  // one per fork of this run
  std::optional<Error> first_error_;
  std::optional<Error> shared_cause_;  // the one cause of every failure, said once
  std::size_t shared_failures_ = 0;    // how many forks it failed
  bool snapshot_left_ = false;         // a rollback could not delete the snapshot this run took
  bool took_snapshot_ = false;  // this run took the snapshot (no --snapshot): rollback removes it
  std::size_t own_forks_ = 0;   // the first entries of the manifest are this run's forks
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_write_{};
  std::chrono::steady_clock::duration last_write_took_{};
};

[[noreturn]] void usage(const std::string& message) {
  throw TforkError(ErrorKind::usage, "UsageError", message);
}

[[noreturn]] void conflict(const std::string& message) {
  throw TforkError(ErrorKind::conflict, "ManifestExists", message);
}

// An existing manifest may be the only record of forks and keys still alive (cli.md §4.4).
void adopt_manifest(ForkCreatePlan& plan, const std::filesystem::path& path, bool exist_ok) {
  Manifest existing;
  try {
    existing = read_manifest(path);
  } catch (const TforkError& e) {
    conflict(fmt::format("{} exists and is not a tfork manifest ({}); refusing to overwrite it",
                         path.string(), e.error().message));
  }
  if (!records_live_resources(existing)) return;  // nothing of it may exist: replace it
  if (!exist_ok)
    conflict(fmt::format(
        "manifest {} records forks or keys of another run; tear them down first (tfork "
        "teardown --manifest {}), choose another --manifest, or pass --exist-ok to adopt it",
        path.string(), path.string()));
  if (existing.source != plan.source)
    conflict(fmt::format("manifest {} belongs to a run on source {}, not {}", path.string(),
                         existing.source, plan.source));
  // Continuing that run: its snapshot, unless this run names one.
  if (plan.snapshot.empty() && plan.snapshot_lookup.empty() && !existing.snapshot.empty()) {
    plan.snapshot = existing.snapshot;
    plan.snapshot_name.reset();
  }
  plan.adopted = std::move(existing);
}

// The names of `count` more forks of a run whose forks are P-1 … P-N: P-(N+1) onward.
std::vector<std::string> next_fork_names(const Manifest& manifest, int count,
                                         const std::string& path) {
  std::string prefix;
  long last = 0;
  for (const auto& fork : manifest.forks) {
    const auto dash = fork.bucket.rfind('-');
    const auto digits = dash == std::string::npos ? std::string_view()
                                                  : std::string_view(fork.bucket).substr(dash + 1);
    long index = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    const auto stem = dash == std::string::npos ? std::string() : fork.bucket.substr(0, dash);
    if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size() ||
        (!prefix.empty() && stem != prefix))
      usage(
          fmt::format("--add: the forks of {} are not all named PREFIX-N ({}), so there is no "
                      "next name; name the new forks instead (with --exist-ok)",
                      path, fork.bucket));
    prefix = stem;
    last = std::max(last, index);
  }
  if (prefix.empty()) usage(fmt::format("--add: {} records no fork to number on from", path));
  std::vector<std::string> names;
  for (int i = 1; i <= count; ++i)
    names.push_back(fmt::format("{}-{}", prefix, last + i));
  return names;
}

}  // namespace

std::string default_fork_prefix(std::string_view source, std::int64_t now_ms, int count) {
  constexpr std::size_t k_max_bucket_name = 63;  // tigris-wire.md §2.1
  const auto suffix = fmt::format("-fork-{}", now_ms);
  const auto largest = fmt::format("-{}", std::max(count, 1));
  const auto room = k_max_bucket_name - std::min(k_max_bucket_name, suffix.size() + largest.size());
  auto stem = source.substr(0, room);
  while (!stem.empty() && (stem.back() == '-' || stem.back() == '.'))
    stem.remove_suffix(1);
  return std::string(stem) + suffix;
}

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
  if (prefix.empty()) prefix = default_fork_prefix(request.source, now_ms, request.count);
  bool exist_ok = request.exist_ok;
  std::vector<std::string> added;
  if (request.add > 0) {
    if (request.count != 0 || !request.names.empty() || !request.prefix.empty())
      usage("--add K grows the run of --manifest by K forks: give no -n, --prefix or fork names");
    if (!request.manifest_path) usage("--add K needs --manifest FILE: the run to grow");
    added = next_fork_names(read_manifest(*request.manifest_path), request.add,
                            request.manifest_path->string());
    exist_ok = true;  // the manifest is adopted: that is what growing a run means
  }
  if (!added.empty()) {
    plan.names = std::move(added);
  } else if (!request.names.empty()) {
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
    if (request.snapshot_name)
      usage("--snapshot-name names the snapshot fork create takes; it cannot rename --snapshot");
    // cli.md §4.8: a decimal ns timestamp is a version; anything else names a snapshot.
    if (tigris::is_snapshot_version(request.snapshot)) {
      plan.snapshot = request.snapshot;
    } else {
      if (request.any_version)
        usage(fmt::format("--any-version needs a snapshot version, not the name '{}'",
                          output::printable(request.snapshot)));
      plan.snapshot_lookup = request.snapshot;
    }
    plan.any_version = request.any_version;
  } else {
    if (request.any_version) usage("--any-version goes with --snapshot VERSION");
    plan.snapshot_name = request.snapshot_name.value_or("tfork " + prefix);
    if (auto problem = tigris::snapshot_name_problem(*plan.snapshot_name))
      usage(fmt::format("invalid --snapshot-name '{}': {}", *plan.snapshot_name, *problem));
  }
  if (request.expires_in) {
    const auto expires_in = parse_expires_in(*request.expires_in);
    if (!expires_in) usage(expires_in_problem(*request.expires_in));
    // The expiry lives in the name of the snapshot this run takes: a snapshot given with
    // --snapshot already has its name, and an expiry only in the manifest would be lost with
    // it, so teardown --source S --expired could never find these forks.
    if (!request.snapshot.empty())
      usage(
          "--expires-in records the expiry in the name of the snapshot fork create takes, so it "
          "cannot go with --snapshot; leave --snapshot out (forks made from a snapshot whose "
          "name ends with ' expires=<time>' expire with it)");
    plan.expires_at = expiry_after(
        std::chrono::system_clock::time_point(std::chrono::milliseconds(now_ms)), *expires_in);
    if (rules::k_max_snapshot_name < k_expiry_suffix_size ||
        plan.snapshot_name->size() > rules::k_max_snapshot_name - k_expiry_suffix_size)
      usage(
          fmt::format("--snapshot-name is too long to carry the expiry: at most {} characters "
                      "with --expires-in",
                      rules::k_max_snapshot_name - k_expiry_suffix_size));
    plan.snapshot_name = snapshot_name_with_expiry(*plan.snapshot_name, *plan.expires_at);
  }

  if (request.keys == "editor")
    plan.role = iam::Role::editor;
  else if (request.keys == "readonly")
    plan.role = iam::Role::read_only;
  else if (request.keys == "none")
    plan.role = std::nullopt;
  else
    usage(fmt::format("--keys must be editor, readonly or none, got '{}'", request.keys));

  plan.keep_partial = request.keep_partial;
  plan.exist_ok = exist_ok;

  // cli.md §4.4: a run that mints keys always writes a manifest, or the secrets are lost.
  auto manifest_path = request.manifest_path;
  if (!manifest_path && plan.role) {
    manifest_path = std::filesystem::path(".") / (prefix + ".manifest.json");
    plan.manifest_defaulted = true;
  }
  if (manifest_path) {
    struct stat info {};
    if (::lstat(manifest_path->c_str(), &info) == 0) {
      if (S_ISDIR(info.st_mode))
        usage(fmt::format("manifest {} is a directory", manifest_path->string()));
      if (info.st_size > 0) adopt_manifest(plan, *manifest_path, exist_ok);
    }
    if (plan.expires_at && plan.adopted && !plan.snapshot.empty())
      usage(
          fmt::format("--expires-in cannot change the expiry of the run of {}: its forks come "
                      "from the snapshot it took already (they expire with it)",
                      manifest_path->string()));
    plan.manifest_path = manifest_path;
  }
  return plan;
}

std::vector<tigris::Operation> fork_create_operations(const ForkCreatePlan& plan) {
  std::vector<tigris::Operation> operations;
  std::string version = plan.snapshot;
  if (!plan.snapshot_lookup.empty()) {
    operations.push_back(tigris::list_snapshots(plan.source, "", 0));
    version = fmt::format("<newest version named {}>", output::printable(plan.snapshot_lookup));
  } else if (version.empty()) {
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
                                  const BatchSettings& settings) {
  return ForkRun(client, plan, settings).run();
}

}  // namespace tfork::workflow
