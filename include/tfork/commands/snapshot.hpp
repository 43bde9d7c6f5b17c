// SPDX-License-Identifier: Apache-2.0
#pragma once
// tfork snapshot take | ls | rm (cli.md §2, §6; tigris-wire.md §1.4, §2.3–2.5).

#include "tfork/cli/command.hpp"
#include "tfork/output/item_status.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/tigris/client.hpp"
#include "tfork/workflow/batch.hpp"

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tfork::commands {

void register_snapshot(CLI::App& root, cli::Context& context);

namespace snapshot {

struct TakeOptions {
  std::string bucket;
  std::optional<std::string> name;
};

struct TakeResult {
  std::string bucket;
  std::string version;
  std::optional<std::string> name;
};

// Throws TforkError(usage) for a bad bucket or snapshot name.
void check(const TakeOptions& options);
TakeResult run_snapshot_take(tigris::Client& client, const TakeOptions& options);
// The command: names checked (exit 64 before anything is sent), --dry-run, the result.
cli::CommandResult run_snapshot_take(const TakeOptions& options, cli::Context& context);
output::Json to_json(const TakeResult& result);
std::string to_table(const TakeResult& result);  // only the version, for v=$(...)

struct ListOptions {
  std::string bucket;
  int limit = 0;  // 0: all
};

// How many existing forks of a bucket were made from each of its snapshots (version -> count),
// from the one fork listing (tigris::find_forks).
using ForkCounts = std::map<std::string, int>;
ForkCounts count_forks(tigris::Client& client, const std::string& bucket);

struct ListResult {
  std::string bucket;
  std::vector<tigris::Snapshot> snapshots;  // newest first
  std::optional<ForkCounts> forks;          // nullopt: the fork listing failed (FORKS "-")
};

// The snapshots, then (when there are any) the bucket's forks, counted per snapshot. A failed
// fork listing is a warning, not a failure: the counts are then absent.
ListResult run_snapshot_ls(tigris::Client& client, const ListOptions& options);
cli::CommandResult run_snapshot_ls(const ListOptions& options, cli::Context& context);
output::Json to_json(const ListResult& result);
std::string to_table(const ListResult& result);

struct RemoveOptions {
  std::string bucket;
  std::vector<std::string> versions;
};

struct RemoveItem {
  std::string version;
  output::ItemStatus outcome;  // deleted | not_found | failed
};

struct RemoveResult {
  std::string bucket;
  std::vector<RemoveItem> versions;
};

void check(const RemoveOptions& options);
// One item of the batch runner per version (the phase "snapshots").
RemoveResult run_snapshot_rm(tigris::Client& client, const RemoveOptions& options,
                             const workflow::BatchSettings& settings);
output::Json to_json(const RemoveResult& result);
std::string to_table(const RemoveResult& result);
std::optional<Error> batch_error(const RemoveResult& result);
// The command: versions checked and made unique, --dry-run, the deletes, the exit rule.
cli::CommandResult run_snapshot_rm(RemoveOptions options, cli::Context& context);

// ---- snapshot prune (cli.md §10)

struct PruneOptions {
  std::string bucket;
  std::optional<int> keep_last;                         // keep the N newest
  std::optional<std::chrono::milliseconds> older_than;  // or: delete those older than this
  bool unused = false;                                  // never delete one a fork was made from
};

struct PruneItem {
  tigris::Snapshot snapshot;
  std::optional<int> forks;    // existing forks made from it; nullopt when not known
  output::ItemStatus outcome;  // deleted | not_found | failed | kept | would_delete
};

struct PruneResult {
  std::string bucket;
  bool dry_run = false;
  std::vector<PruneItem> snapshots;  // the ones the rule selected, newest first
};

// Exactly one of --keep-last / --older-than, a valid bucket name, N >= 0: else usage (64),
// before anything is sent.
void check(const PruneOptions& options);
// Lists the snapshots and the forks, selects by the rule (--keep-last: all but the N newest;
// --older-than: created before now - D), keeps those in use with --unused, and deletes the
// rest in parallel (run_snapshot_rm), unless `dry_run`, which sends no delete.
PruneResult run_snapshot_prune(tigris::Client& client, const PruneOptions& options,
                               std::chrono::system_clock::time_point now, bool dry_run,
                               const workflow::BatchSettings& settings);
output::Json to_json(const PruneResult& result);
std::string to_table(const PruneResult& result);
// Exit 0 when every selected snapshot was deleted, found gone or kept; else the batch rule.
std::optional<Error> batch_error(const PruneResult& result);
// The options as parsed: --keep-last and --older-than as given, checked by the command.
struct PruneArguments {
  PruneOptions options;
  std::optional<int> keep_last;
  std::string older_than;
};
cli::CommandResult run_snapshot_prune(const PruneArguments& arguments, cli::Context& context);

}  // namespace snapshot
}  // namespace tfork::commands
