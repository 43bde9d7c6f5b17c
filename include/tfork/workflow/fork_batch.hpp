// SPDX-License-Identifier: Apache-2.0
#pragma once
// `fork create` (cli.md §4): one snapshot, N forks from it in parallel, a scoped key for each,
// a manifest that is consistent at every kill point, and rollback on failure.
// Each fork is one item of one batch (tfork/workflow/batch.hpp) that goes CreateBucketFork →
// (HeadBucket, when the create answered 409 and --exist-ok or a retry makes that answer
// interesting) → CreateAccessKeyWithBucketsRole, so a fork's key goes out as soon as the fork
// exists and no fork waits for the slowest other: round trips, snapshot (1) + ⌈2N/concurrency⌉.

#include "tfork/iam/access_keys.hpp"
#include "tfork/tigris/client.hpp"
#include "tfork/workflow/batch.hpp"
#include "tfork/workflow/expiry.hpp"
#include "tfork/workflow/manifest.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tfork::workflow {

// The most forks one run makes: above this a typo (-n 10000) is more likely than a plan.
inline constexpr int k_max_forks = 1000;

struct ForkCreatePlan {
  std::string source;
  std::vector<std::string> names;  // the forks, in order
  std::string snapshot;  // --snapshot VERSION (or the adopted manifest's); "" takes one first
  // --snapshot NAME: resolved to the newest version of that name before any fork is made.
  std::string snapshot_lookup;
  // Accept --snapshot VERSION without checking that ListBucketSnapshots lists it.
  bool any_version = false;
  std::optional<std::string> snapshot_name;  // the name of the snapshot taken (when taking one)
  // --expires-in: when the run's forks expire. The snapshot taken carries it in its name
  // (tfork/workflow/expiry.hpp), so the service tells it to teardown --expired.
  std::optional<ExpiryTime> expires_at;
  // The run continues another run's manifest (--exist-ok on an existing manifest): its
  // entries for other forks are kept, and so is its snapshot.
  std::optional<Manifest> adopted;
  bool manifest_defaulted = false;  // ./<prefix>.manifest.json, chosen because keys are minted
  std::optional<iam::Role> role = iam::Role::editor;  // nullopt: --keys none
  std::optional<std::filesystem::path> manifest_path;
  bool keep_partial = false;
  bool exist_ok = false;
};

// What the user asked for, before any validation.
struct ForkCreateRequest {
  std::string source;
  std::vector<std::string> names;  // explicit names (SOURCE NAME...)
  int count = 0;                   // -n N (0: not given)
  std::string prefix;              // --prefix ("" : <source>-fork-<unix-ms>)
  std::string snapshot;            // a version or a snapshot name
  bool any_version = false;
  std::optional<std::string> snapshot_name;
  std::string keys = "editor";  // editor | readonly | none
  std::optional<std::filesystem::path> manifest_path;
  bool keep_partial = false;
  bool exist_ok = false;
  // --add K: K more forks for the run of `manifest_path`, numbered on from its last one, from
  // its snapshot (the manifest is adopted, keys and all).
  int add = 0;
  // --expires-in DURATION (nullopt: the forks do not expire), parsed here for both the CLI and
  // MCP's fork_create. It needs the snapshot the run takes (its name carries the expiry):
  // refused with --snapshot, and when growing a run whose snapshot is already taken.
  std::optional<std::string> expires_in;
};

// The prefix of `fork create SOURCE -n COUNT` without --prefix: "<source>-fork-<now_ms>", with
// SOURCE cut short when "<prefix>-<COUNT>" would pass the 63 characters of a bucket name, and
// then any '-' or '.' it ends with dropped, so every fork name stays a valid bucket name.
std::string default_fork_prefix(std::string_view source, std::int64_t now_ms, int count);

// Checks everything that can be checked without a request and builds the plan; throws
// TforkError(usage) with a one-line message naming the bad value and why (cli.md §4.6).
// `now_ms` is the clock for the default prefix. A run that mints keys always gets a manifest
// (default ./<prefix>.manifest.json). An existing manifest that records forks or keys is
// another run's: TforkError(conflict) unless --exist-ok, which adopts it (same source only).
// A manifest recording nothing that may exist (a run that failed before creating anything)
// may be replaced.
ForkCreatePlan plan_fork_create(const ForkCreateRequest& request, std::int64_t now_ms);

// The requests the plan sends, for --dry-run (the forks name a placeholder version when the
// snapshot is still to be taken; key requests use fresh request ids).
std::vector<tigris::Operation> fork_create_operations(const ForkCreatePlan& plan);

struct ForkCreateOutcome {
  Manifest manifest;  // every fork with its own status
  // Why the run failed, when it did; its kind is the exit code (cli.md §6): the first failure's
  // after a rollback; with --keep-partial, the batch rule (batch_error: one kind for all, else
  // partial); interrupted.
  std::optional<Error> error;
  // The default manifest (a timestamped name nobody chose) of a run that made nothing, or
  // undid all it made, is removed again (issue 26 §2): false then.
  bool manifest_kept = true;
};

// Runs the plan. Never throws for service or network failures (they end up in the outcome);
// throws TforkError for a manifest that cannot be written. The forks are the phase "forks" of
// the progress events; a rollback's deletes are "rollback".
ForkCreateOutcome run_fork_create(tigris::Client& client, const ForkCreatePlan& plan,
                                  const BatchSettings& settings);

}  // namespace tfork::workflow
