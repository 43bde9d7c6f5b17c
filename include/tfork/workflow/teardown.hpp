// SPDX-License-Identifier: Apache-2.0
#pragma once
// `teardown` (cli.md §5): delete exactly the run's forks and never leave a key behind.
//
// 1. HeadBucket of every target (with the first page of ListAccessKeys in the same batch): a
//    bucket is deleted only when it shows it is a fork, of the expected source when known. A
//    fork parent is left in place (its keys revoked) unless --recursive, which finds its
//    descendants through the fork listing and deletes them children first. A manifest's
//    teardown is always recursive: forks made from the run's forks are part of the run. HeadBucket
//    404 is no proof of absence (a new fork may not be visible yet): the force DELETE goes out
//    anyway.
// 2. Every access key whose roles are all on buckets being deleted (or already gone, or left
//    only because they have forks) is revoked, whatever its name, and so is every key a
//    manifest records; a key with roles elsewhere too is reported, not deleted.
// 3. Buckets, children first; a parent refused because its children are still going
//    (409, or 400/403 with a fork-related code) is retried with bounded, interruptible backoff.
//    Only DeleteBucket 404 means gone. The last of these batches also lists the forks of the
//    source, for step 4.
// 4. The snapshot a run took itself, once its last fork is gone and no remaining fork of the
//    source was made from it (unless --keep-snapshot).
// Manifests are rewritten as it goes (forks `deleted`, keys `revoked`). Round trips for N forks
// at concurrency C: ⌈(N+1)/C⌉ + ⌈N/C⌉ + ⌈(N+1)/C⌉ + 1 (one more per extra page of keys).
// Each step is a phase of the batch runner (tfork/workflow/batch.hpp): "checks", "keys",
// "forks", "snapshots".

#include "tfork/tigris/client.hpp"
#include "tfork/workflow/batch.hpp"
#include "tfork/workflow/duration.hpp"
#include "tfork/workflow/expiry.hpp"
#include "tfork/workflow/manifest.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tfork::workflow {

inline constexpr std::size_t k_no_manifest = static_cast<std::size_t>(-1);

struct TeardownTarget {
  std::string bucket;
  std::vector<std::string> key_ids;      // keys recorded for it (manifests)
  std::string expected_source;           // when known (manifest, --source): a fork of this
  std::size_t manifest = k_no_manifest;  // index into TeardownPlan::manifests
};

struct SnapshotTarget {
  std::string bucket;
  std::string version;  // "" : look it up by `name` (a run killed before it learnt it)
  std::string name;
  // Deleted only when no remaining fork of `bucket` was made from it (a snapshot the run took
  // itself); false for --delete-snapshot of a snapshot the run was given.
  bool only_if_unused = true;
  std::size_t manifest = k_no_manifest;  // its forks must all be gone first
  bool name_is_prefix = false;           // every snapshot whose name starts with `name` (--all)
  std::optional<std::int64_t> created_before;  // Unix seconds (--all --older-than)
  // --expired: (with name "" and name_is_prefix) every snapshot whose name carries an expiry
  // at or before this instant (tfork/workflow/expiry.hpp).
  std::optional<ExpiryTime> expired_by;
};

struct ManifestFile {
  std::filesystem::path path;
  Manifest manifest;
};

struct TeardownPlan {
  std::vector<TeardownTarget> targets;    // in output order, each bucket once
  std::vector<SnapshotTarget> snapshots;  // deleted after the forks
  std::vector<ManifestFile> manifests;    // updated as the teardown goes
  bool allow_non_fork = false;  // also an empty bucket that is not a fork (no snapshots, forks)
  bool recursive = false;
  // --dry-run: every read (heads, the fork and key listings), then a `would-delete` item per
  // fork, key and snapshot that would go; nothing is changed and no manifest is written.
  bool dry_run = false;
  // How long a refused parent delete is retried (children still disappearing).
  std::chrono::milliseconds parent_retry_budget{30000};
};

// The plan for manifests: every fork that may exist and every recorded key. The snapshot a
// run took itself is added unless `keep_snapshot`; a snapshot it was given only with
// `delete_snapshot`. A bucket named in several manifests appears once with all its keys.
TeardownPlan plan_from_manifests(std::vector<ManifestFile> manifests, bool delete_snapshot,
                                 bool keep_snapshot);
// --manifest M --expired: whether the run of `manifest` has expired at `now` (its
// "expires_at", else the expiry its recorded snapshot name carries); false when it never does.
bool manifest_expired(const Manifest& manifest, std::chrono::system_clock::time_point now);
// The plan for FORK... (names validated: throws TforkError(usage) before anything is sent).
TeardownPlan plan_from_names(const std::vector<std::string>& names);

struct SourceSelection {
  std::string source;
  std::string prefix;                              // forks named PREFIX-<n>; "" with `all`
  bool all = false;                                // every fork of the source
  std::optional<std::chrono::seconds> older_than;  // with `all`: created before now - this
  bool keep_snapshot = false;
  // Instead of `prefix`/`all`: the forks whose origin snapshot (of the source) carries an
  // expiry that has passed (fork create --expires-in), their descendants with them (children
  // first), and those snapshots once unused.
  bool expired = false;
};
// The forks of a source (the fork listing, entries with fork information naming it only;
// tigris-wire.md §2.8c fallback included; with `expired`, also the source's snapshot listing).
// Throws TforkError when listing fails.
TeardownPlan plan_from_source(tigris::Client& client, const SourceSelection& selection,
                              std::chrono::system_clock::time_point now);

// A fork's or snapshot's teardown status (deleted, already_gone, not_found, failed, skipped)
// and a key's (deleted, already_gone, none, failed, kept): the statuses of every batch.
using BucketOutcome = output::Status;
using KeyOutcome = output::Status;

struct TeardownItem {
  std::string bucket;
  BucketOutcome status = BucketOutcome::failed;
  KeyOutcome key = KeyOutcome::none;
  std::optional<Error> error;
};

struct KeyItem {
  std::string access_key_id;
  std::string name;
  KeyOutcome status = KeyOutcome::failed;  // deleted | already-gone | failed | kept
  std::optional<Error> error;
};

struct SnapshotItem {
  std::string bucket;
  std::string version;
  BucketOutcome status = BucketOutcome::failed;  // deleted | already-gone | skipped | failed
  std::optional<Error> error;
};

struct TeardownResult {
  std::vector<TeardownItem> forks;
  std::vector<KeyItem> keys;
  std::vector<SnapshotItem> snapshots;
  // Why it did not all succeed, when it did not; its kind is the exit code (batch_error's
  // rule: one kind for every failed item, else partial; interrupted; nothing found).
  std::optional<Error> error;
};

// `{"forks": [{"bucket", "status", "key", "error"?}], "snapshots": [{"bucket", "version",
// "status", "error"?}], "keys": [{"access_key_id", "name", "status", "error"?}]}` (cli.md §6).
output::Json to_json(const TeardownResult& result);
std::string to_table(const TeardownResult& result);

TeardownResult run_teardown(tigris::Client& client, const TeardownPlan& plan,
                            const BatchSettings& settings);

}  // namespace tfork::workflow
