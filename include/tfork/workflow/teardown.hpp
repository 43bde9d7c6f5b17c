#pragma once
// `teardown` (cli.md §5): revoke each fork's key and force-delete the fork, in parallel, forks
// of forks children-first, only buckets that HeadBucket shows are forks. Idempotent: whatever
// is already gone counts as done, so a re-run finishes an interrupted one.
//
// Round trips for a flat set: HeadBucket + DeleteAccessKey together (1), DeleteBucket (1).
// Keys are ours whatever the bucket has become, so their deletes do not wait for the safety
// check; a bucket is deleted only after its key, so a live fork never outlives its revocation
// by accident of ordering. Each further level of forks-of-forks adds one round trip.

#include "tfork/tigris/client.hpp"
#include "tfork/workflow/manifest.hpp"

#include <atomic>
#include <optional>
#include <string>
#include <vector>

namespace tfork::workflow {

struct TeardownTarget {
  std::string bucket;
  std::vector<std::string> key_ids;  // keys known to belong to it (from manifests)
  bool find_key = false;        // a key `<bucket>-key` may exist unrecorded: look it up by name
  std::string expected_source;  // when known (manifest, --source): it must be a fork of this
};

struct SnapshotTarget {
  std::string bucket;
  std::string version;
};

struct TeardownPlan {
  std::vector<TeardownTarget> targets;    // in output order, each bucket once
  std::vector<SnapshotTarget> snapshots;  // --delete-snapshot: deleted after the forks
  bool allow_non_fork = false;
  std::size_t concurrency = 32;
  bool progress = false;
};

// The plan for manifests: every fork that may exist (pending, created, exists, or a failure
// without a definite answer) and every recorded key; the manifests' snapshots with
// `delete_snapshot`. A bucket named in several manifests appears once with all its keys.
TeardownPlan plan_from_manifests(const std::vector<Manifest>& manifests, bool delete_snapshot);
// The plan for FORK... (names validated: throws TforkError(usage) before anything is sent).
TeardownPlan plan_from_names(const std::vector<std::string>& names);
// The forks of `source` whose names start with `prefix` (ListBuckets + X-Tigris-Fork, with
// the full-listing fallback of tigris-wire.md §2.8c). Throws TforkError when listing fails.
TeardownPlan plan_from_source(tigris::Client& client, const std::string& source,
                              const std::string& prefix);

enum class BucketOutcome { deleted, already_gone, failed, skipped };
enum class KeyOutcome { deleted, already_gone, none, failed };

struct TeardownItem {
  std::string bucket;
  BucketOutcome status = BucketOutcome::failed;
  KeyOutcome key = KeyOutcome::none;
  std::optional<Error> error;
};

struct SnapshotItem {
  std::string bucket;
  std::string version;
  BucketOutcome status = BucketOutcome::failed;  // deleted | already-gone | failed
  std::optional<Error> error;
};

struct TeardownResult {
  std::vector<TeardownItem> forks;
  std::vector<SnapshotItem> snapshots;
  int exit_code = 0;  // 0; 130; one error kind's code when every item failed for it; else 7
  std::optional<Error> error;  // what to say on stderr when exit_code != 0
};

// `{"forks": [{"bucket", "status", "key", "error"?}], "snapshots": [{"bucket", "version",
// "status", "error"?}]}` (cli.md §6; "snapshots" is [] without --delete-snapshot).
output::Json to_json(const TeardownResult& result);
std::string to_table(const TeardownResult& result);

// The requests a teardown would send, for --dry-run (every delete, in wave order unknown
// until HeadBucket answers: listed as heads, key deletes, then bucket deletes).
std::vector<tigris::Operation> teardown_operations(const TeardownPlan& plan);

TeardownResult run_teardown(tigris::Client& client, const TeardownPlan& plan,
                            const std::atomic<bool>& interrupted);

}  // namespace tfork::workflow
