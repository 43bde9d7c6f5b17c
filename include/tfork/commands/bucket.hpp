#pragma once
// tfork bucket create | rm (cli.md §2, §6; tigris-wire.md §2.1, §2.7, §2.10).

#include "tfork/cli/command.hpp"
#include "tfork/output/item_status.hpp"
#include "tfork/tigris/client.hpp"

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
};

// Throws TforkError for a failure (exit code of its kind). With --exist-ok and --snapshots,
// an existing regular bucket of ours gets snapshots turned on (cli.md §10).
CreateResult run_bucket_create(tigris::Client& client, const CreateOptions& options);
output::Json to_json(const CreateResult& result);
std::string to_table(const CreateResult& result);

// bucket set NAME --snapshots on|off: the bucket-settings PATCH {"type":1|0} (tigris-wire
// §2.2). Off is refused (conflict, exit 6) before the PATCH when HeadBucket shows a fork or a
// fork parent. Throws TforkError for a failure, or for a settings answer with status error.
struct SetResult {
  std::string bucket;
  bool snapshots_enabled = false;
};
SetResult run_bucket_set(tigris::Client& client, const std::string& name, bool snapshots);

struct RemoveOptions {
  std::vector<std::string> names;  // each once
  bool force = false;
};

struct RemoveItem {
  std::string bucket;
  output::ItemStatus outcome;  // "deleted" | "already-gone" | "failed"
};

struct RemoveResult {
  std::vector<RemoveItem> buckets;  // in input order
};

// `progress`: show the progress line (output::Progress) while the deletes run.
RemoveResult run_bucket_rm(tigris::Client& client, const RemoveOptions& options,
                           std::size_t concurrency, bool progress = false);
output::Json to_json(const RemoveResult& result);
std::string to_table(const RemoveResult& result);
// The batch exit rule of cli.md §6 (workflow::batch_error).
std::optional<Error> batch_error(const RemoveResult& result);

}  // namespace bucket
}  // namespace tfork::commands
