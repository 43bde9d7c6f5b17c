#pragma once
// tfork snapshot take | ls | rm (cli.md §2, §6; tigris-wire.md §1.4, §2.3–2.5).

#include "tfork/cli/command.hpp"
#include "tfork/output/item_status.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/tigris/client.hpp"

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
output::Json to_json(const TakeResult& result);
std::string to_table(const TakeResult& result);  // only the version, for v=$(...)

struct ListOptions {
  std::string bucket;
  int limit = 0;  // 0: all
};

struct ListResult {
  std::string bucket;
  std::vector<tigris::Snapshot> snapshots;  // newest first
};

ListResult run_snapshot_ls(tigris::Client& client, const ListOptions& options);
output::Json to_json(const ListResult& result);
std::string to_table(const ListResult& result);

struct RemoveOptions {
  std::string bucket;
  std::vector<std::string> versions;
};

struct RemoveItem {
  std::string version;
  output::ItemStatus outcome;  // "deleted" | "already-gone" | "failed"
};

struct RemoveResult {
  std::string bucket;
  std::vector<RemoveItem> versions;
};

void check(const RemoveOptions& options);
// `progress`: show the progress line (output::Progress) while the deletes run.
RemoveResult run_snapshot_rm(tigris::Client& client, const RemoveOptions& options,
                             std::size_t concurrency, bool progress = false);
output::Json to_json(const RemoveResult& result);
std::string to_table(const RemoveResult& result);
std::optional<Error> batch_error(const RemoveResult& result);

}  // namespace snapshot
}  // namespace tfork::commands
