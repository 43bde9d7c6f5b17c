// SPDX-License-Identifier: Apache-2.0
#pragma once
// tfork bucket create | rm (cli.md §2, §6; tigris-wire.md §2.1, §2.7, §2.10).

#include "tfork/cli/command.hpp"
#include "tfork/output/item_status.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/tigris/client.hpp"
#include "tfork/workflow/batch.hpp"
#include "tfork/workflow/expiry.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace tfork::commands {

void register_bucket(CLI::App& root, cli::Context& context);

namespace bucket {

struct CreateOptions {
  std::string name;
  bool snapshots = false;
  bool exist_ok = false;
};

struct CreateResult {
  std::string bucket;
  bool created = false;
  bool snapshots_enabled = false;
  bool snapshots_turned_on = false;  // --snapshots --exist-ok on a regular bucket of ours
};

// Throws TforkError for a failure (exit code of its kind). With --exist-ok and --snapshots,
// an existing regular bucket of ours gets snapshots turned on (cli.md §10).
CreateResult run_bucket_create(tigris::Client& client, const CreateOptions& options,
                               const workflow::BatchSettings& settings);
// The command: the name checked (exit 64 before anything is sent), --dry-run, the result.
cli::CommandResult run_bucket_create(const CreateOptions& options, cli::Context& context);
output::Json to_json(const CreateResult& result);
std::string to_table(const CreateResult& result);

// bucket set NAME --snapshots on|off: the bucket-settings PATCH {"type":1|0} (tigris-wire
// §2.2). Off is refused (conflict, exit 6) before the PATCH when HeadBucket shows a fork or a
// fork parent. Throws TforkError for a failure, or for a settings answer with status error.
struct SetResult {
  std::string bucket;
  bool snapshots_enabled = false;
};
// The real service applies the change with a delay (up to ~20 s; tigris-wire.md §10) and
// refuses a snapshot or fork sent in between, so the PATCH is followed by HeadBucket until it
// shows the change: within `settle` (30 s), interruptibly (exit 130/143), else a failure.
SetResult run_bucket_set(tigris::Client& client, const std::string& name, bool snapshots,
                         const workflow::BatchSettings& settings,
                         std::chrono::milliseconds settle = std::chrono::seconds(30));
struct SetOptions {
  std::string name;
  std::string snapshots;  // "on" | "off"
};
cli::CommandResult run_bucket_set(const SetOptions& options, cli::Context& context);

struct RemoveOptions {
  std::vector<std::string> names;  // each once
  bool force = false;
};

struct RemoveItem {
  std::string bucket;
  output::ItemStatus outcome;  // deleted | not_found | failed
};

struct RemoveKeyItem {
  std::string access_key_id;
  std::string name;
  output::ItemStatus outcome;  // deleted | already_gone | failed
};

struct RemoveResult {
  std::vector<RemoveItem> buckets;  // in input order
  std::vector<RemoveKeyItem> keys;  // the deleted forks' keys, revoked with them
};

// One item of the batch runner per bucket (phases "checks", "buckets", "keys"): a deleted
// fork's keys are revoked with it; never throws for a bucket's failure, which its item holds.
RemoveResult run_bucket_rm(tigris::Client& client, const RemoveOptions& options,
                           const workflow::BatchSettings& settings);
output::Json to_json(const RemoveResult& result);
std::string to_table(const RemoveResult& result);
// The batch exit rule of cli.md §6 (workflow::batch_error).
std::optional<Error> batch_error(const RemoveResult& result);
// The command: names checked and made unique, --dry-run, the deletes, the exit rule.
cli::CommandResult run_bucket_rm(RemoveOptions options, cli::Context& context);

// ---- bucket ls (cli.md §10)

struct ListRow {
  std::string bucket;
  std::string created;                    // as the server sent it; "" when absent
  std::optional<bool> snapshots_enabled;  // nullopt: the listing does not say
  std::optional<std::string> fork_source;
  std::optional<std::string> fork_source_snapshot;
  std::optional<bool> is_fork_parent;  // nullopt: the listing does not say
  // With --forks-of: when the fork expires (fork create --expires-in, read from the name of
  // its snapshot); nullopt when it does not, and always without --forks-of.
  std::optional<workflow::ExpiryTime> expires_at;
};

struct ListResult {
  std::optional<std::string> forks_of;        // --forks-of S
  std::vector<ListRow> buckets;               // natural order of names
  std::chrono::system_clock::time_point now;  // what "expired" is measured against
};

// Without `forks_of`: every bucket (the full listing with IncludeForkInfo, all pages). With
// it: the forks of that bucket (the one fork listing, tigris::find_forks), exit 3 when it
// does not exist.
ListResult run_bucket_ls(tigris::Client& client, const std::optional<std::string>& forks_of);
output::Json to_json(const ListResult& result);
std::string to_table(const ListResult& result);
struct ListOptions {
  std::optional<std::string> forks_of;  // --forks-of S
  bool tree = false;                    // --tree (needs --forks-of)
};
// The command: bucket ls, --forks-of, or --tree (run_bucket_tree).
cli::CommandResult run_bucket_ls(const ListOptions& options, cli::Context& context);

// The fork tree of a bucket (--tree): its snapshots, the forks made from each, and theirs in
// turn. A fork whose snapshot is not in its parent's list hangs from a snapshot node marked
// unlisted; a fork whose listing names no snapshot hangs from its parent directly.
struct TreeNode;
struct TreeSnapshot {
  tigris::Snapshot snapshot;
  bool listed = true;           // false: known only from a fork that was made from it
  std::vector<TreeNode> forks;  // natural order
};
struct TreeNode {
  std::string bucket;
  std::string created;                  // "" for the root (the listings do not say)
  std::vector<TreeSnapshot> snapshots;  // newest first
  std::vector<TreeNode> forks;          // forks whose snapshot is not known
};

// Level by level: the snapshot listings of one level's buckets in parallel (first pages), and
// the fork listing of each bucket that has (or may have) forks. Exit 3 when `source` does not
// exist; a fork that vanished meanwhile is drawn without snapshots.
TreeNode run_bucket_tree(tigris::Client& client, const std::string& source,
                         std::size_t concurrency);
output::Json to_json(const TreeNode& tree);
// The tree drawn with box-drawing characters, every name made printable (output::printable).
std::string to_table(const TreeNode& tree);

}  // namespace bucket
}  // namespace tfork::commands
