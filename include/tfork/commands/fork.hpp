// SPDX-License-Identifier: Apache-2.0
#pragma once
// tfork fork create | env | head | ls (cli.md §2, §4, §6; tigris-wire.md §2.7, §2.8c). The
// create workflow lives in tfork/workflow; `fork head` and `fork ls` are here.

#include "tfork/cli/command.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/tigris/client.hpp"
#include "tfork/workflow/batch.hpp"
#include "tfork/workflow/expiry.hpp"
#include "tfork/workflow/fork_batch.hpp"
#include "tfork/workflow/fork_diff.hpp"
#include "tfork/workflow/promote.hpp"

#include <chrono>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::commands {

// The `fork` group and its subcommands.
void register_fork(CLI::App& root, cli::Context& context);

namespace fork {

// `fork head` and `fork ls` under the `fork` group (fork_inspect.cpp), for register_fork.
void add_fork_head(CLI::App& fork, cli::Context& context);
void add_fork_ls(CLI::App& fork, cli::Context& context);

struct HeadRow {
  std::string bucket;
  bool exists = false;
  tigris::BucketHead head;  // all defaults when the bucket does not exist
};

struct HeadResult {
  std::vector<HeadRow> buckets;
};

// One HeadBucket per bucket, in parallel; a 404 is a row with exists:false. Any other
// failure throws (the first in input order).
HeadResult run_fork_head(tigris::Client& client, const std::vector<std::string>& buckets,
                         const workflow::BatchSettings& settings);
output::Json to_json(const HeadResult& result);
std::string to_table(const HeadResult& result);
// Exit 3 when any bucket does not exist (after printing every row).
std::optional<Error> missing_error(const HeadResult& result);
// The command: names checked (exit 64 before anything is sent), the heads, missing_error.
cli::CommandResult run_fork_head(const std::vector<std::string>& buckets, cli::Context& context);

struct ListResult {
  std::string source;
  std::vector<tigris::FoundFork> forks;  // sorted by bucket name
  // Parallel to `forks`: when each expires, read from the name of the source's snapshot it was
  // made from (tfork/workflow/expiry.hpp); nullopt when it does not expire, or when the
  // source's snapshots could not be listed (a warning says so).
  std::vector<std::optional<workflow::ExpiryTime>> expires_at;
  std::chrono::system_clock::time_point now;  // what "expired" is measured against
  // Set when the source has a snapshot young enough that forks made from it may not be
  // listed yet (tigris::listing_lag_warning).
  std::optional<std::string> lag_warning{};
};

// The fork listing, then (when there are forks) the source's snapshots for their expiry.
ListResult run_fork_ls(
    tigris::Client& client, const std::string& source,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());
// The "EXPIRES" cell: "-", the time, or the time and "expired".
std::string expires_cell(const std::optional<workflow::ExpiryTime>& expires_at,
                         std::chrono::system_clock::time_point now);
cli::CommandResult run_fork_ls(const std::string& source, cli::Context& context);
output::Json to_json(const ListResult& result);
std::string to_table(const ListResult& result);

// ---- after the agents (cli.md §10): fork exec (fork_exec.cpp); fork diff, merge and rebase
// (fork_after.cpp)

void add_fork_exec(CLI::App& fork, cli::Context& context);
void add_fork_after(CLI::App& fork, cli::Context& context);

struct DiffOptions {
  std::string fork;
  std::string prefix;
  bool stat = false;
  bool against_parent = false;  // the three-way view: what the fork and the parent changed
};
// `fork diff --against-parent` (issue 23 §1): every key the fork or its parent changed since
// the fork's snapshot, with whether it conflicts, streamed to `out` as found; then the totals.
// JSON: {"fork","source","snapshot","keys":[{key,fork,parent,conflict}],"fork_changes",
// "parent_changes","conflict_count"}.
void write_three_way(tigris::Client& client, const std::string& fork, const std::string& prefix,
                     bool stat_only, bool json, std::ostream& out);
// Streams the diff of `fork` against its source to `out` as it is found: rows (or, with
// `json`, the cli.md §6 document written piece by piece), then the totals.
void write_diff(tigris::Client& client, const std::string& fork, const std::string& prefix,
                bool stat_only, bool json, std::ostream& out);
// A key for a terminal: control characters as \xNN.
std::string printable_key(std::string_view key);
// The command: the name checked, the diff streamed to stdout (the result prints nothing).
cli::CommandResult run_fork_diff(const DiffOptions& options, cli::Context& context);

struct MergeOptions {
  std::string fork;
  std::string into;  // "" : the fork's source
  bool no_snapshot = false;
  // "refuse" (default): a key changed in both the fork and the parent since the fork's
  // snapshot stops the merge (exit 6); "fork-wins": merged anyway, the parent's change replaced.
  std::string strategy = "refuse";
  // --prefix (repeatable; issue 23 §1, cli.md §14): promote only the fork's changes under
  // these, by CopyObject and DeleteObject per key, instead of the merge request.
  std::vector<std::string> prefixes{};
};
// What a merge would do (issue 23 §1): the fork's changes, and the keys both sides changed;
// with --prefix, within those prefixes only, and the copies and deletes to send.
struct MergePlan {
  workflow::ThreeWayStat stat;
  std::vector<workflow::ThreeWayChange> conflicts;  // the first k_listed_conflicts of them
  std::vector<workflow::ThreeWayChange> changes;    // with --dry-run: the fork's, listed
  std::vector<std::string> prefixes;                // --prefix, as listed (promotion_prefixes)
  std::vector<workflow::PromotionItem> work;        // --prefix: the copies and deletes, key order
  std::int64_t skipped = 0;  // --prefix: fork changes the parent already holds
};
inline constexpr std::size_t k_listed_conflicts = 20;
struct MergeResult {
  std::string fork;
  std::string into;
  std::string before_snapshot;  // "" with --no-snapshot (or, with --prefix, none needed)
  std::string snapshot;         // the parent's version after the merge ("" with --prefix)
  MergePlan plan;               // what the three-way check found
  // --prefix: the snapshot was the one an interrupted run of this promotion took.
  bool before_snapshot_reused = false;
  std::optional<workflow::PromotionOutcome> promotion;  // --prefix: what was sent
};
// The three listings (fork now, its base, the parent now) streamed once (once per prefix with
// --prefix); `list_changes` keeps every change of the fork (for --dry-run), else only the
// first conflicts. With `prefixes`, the plan's work lists the copies and deletes to send.
MergePlan plan_merge(tigris::Client& client, const workflow::DiffTarget& target,
                     const std::vector<std::string>& prefixes, bool list_changes);
// Names and prefixes checked before anything is sent (exit 64).
void check_merge_options(const MergeOptions& options);
// HeadBucket of the fork (the only one a merge sends): its parent and base snapshot. Exit 64
// when it is not a direct fork of --into (or not a fork), 3 when it does not exist, before any
// change.
workflow::DiffTarget merge_target(tigris::Client& client, const MergeOptions& options);
// merge_target's parent.
std::string merge_parent(tigris::Client& client, const MergeOptions& options);
// --prefix: the parent's `before-merge <fork>` snapshot (unless --no-snapshot), then the
// copies and deletes of the plan. The snapshot is taken only when there is something to send,
// and not again when a run interrupted earlier took one (see fork_after.cpp).
MergeResult run_promotion(tigris::Client& client, const MergeOptions& options,
                          const workflow::DiffTarget& target, MergePlan plan,
                          const workflow::BatchSettings& settings);
std::vector<tigris::Operation> merge_operations(const MergeOptions& options,
                                                const std::string& parent);
// The `before-merge <fork>` snapshot of the parent (unless --no-snapshot), then the merge.
MergeResult run_merge(tigris::Client& client, const MergeOptions& options,
                      const std::string& parent);
output::Json to_json(const MergeResult& result);
std::string to_table(const MergeResult& result);
// The plan as a document ({"fork","into","changes":{added,modified,deleted},"parent_changes",
// "conflict_count","conflicts":[{key,fork,parent}]}, with "keys" listing every change when
// kept) and as text.
output::Json to_json(const std::string& fork, const std::string& parent, const MergePlan& plan);
// The refusal of a plan with conflicts (exit 6, the keys named), or none: no conflict, or
// --strategy fork-wins.
std::optional<Error> conflict_error(const MergeOptions& options, const std::string& parent,
                                    const MergePlan& plan);
std::string to_table(const std::string& fork, const std::string& parent, const MergePlan& plan);
// The command: options checked, the three-way check (--dry-run prints it and stops; a conflict
// refuses, exit 6, unless --strategy fork-wins), the confirmation (a terminal asks; elsewhere
// --yes), the merge.
cli::CommandResult run_fork_merge(const MergeOptions& options, cli::Context& context);

struct RebaseResult {
  std::string fork;
  std::string source;
  std::string snapshot;  // the fork's new base
};
// HeadBucket of the fork: its source and base (exit 64 when it is not a fork).
tigris::BucketHead rebase_head(tigris::Client& client, const std::string& fork);
// The rebase, sent once: an answer that never came is settled by the fork's base in HeadBucket
// (moved from `head`'s: it happened), and the rebase is sent again only when it did not move.
RebaseResult run_rebase(tigris::Client& client, const std::string& fork,
                        const tigris::BucketHead& head);
output::Json to_json(const RebaseResult& result);
std::string to_table(const RebaseResult& result);
cli::CommandResult run_fork_rebase(const std::string& fork, cli::Context& context);

}  // namespace fork
}  // namespace tfork::commands
