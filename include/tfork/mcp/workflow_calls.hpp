// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one door from tfork mcp's tools into tfork's workflows and commands: each function does
// what the CLI command of the same name does (the same plan, the same workflow, the same
// document), given a client and typed arguments already checked against the server's scope.
// Nothing here knows MCP; nothing in the tools knows how a workflow runs.

#include "tfork/output/render.hpp"
#include "tfork/tigris/client.hpp"
#include "tfork/workflow/fork_diff.hpp"
#include "tfork/workflow/manifest.hpp"
#include "tfork/workflow/teardown.hpp"

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tfork::mcp::workflow_calls {

using output::Json;

// `snapshot take BUCKET [--name NAME]`: {"bucket", "version", "name"}.
Json take_snapshot(tigris::Client& client, const std::string& bucket,
                   const std::optional<std::string>& name);
// `snapshot ls BUCKET`: {"bucket", "snapshots": [{"version", "name", "created", "forks"}]},
// newest first.
Json list_snapshots(tigris::Client& client, const std::string& bucket);

struct ForkCreateArgs {
  std::string source;
  int count = 0;
  std::string prefix;    // "" : <source>-fork-<unix-ms>, as fork create names them
  std::string snapshot;  // a version or a snapshot name; "" : take one
  std::string keys = "editor";
  std::filesystem::path manifest_dir;
  std::optional<std::string> expires_in;  // nullopt: never; else as the CLI's --expires-in
};
struct ForkCreateDone {
  std::filesystem::path manifest;  // written as fork create writes it (0600, atomically)
  workflow::Manifest record;       // holds the keys' secrets: never into a result
  std::optional<Error> error;      // the failure of the run, when it failed
};
// `fork create SOURCE -n COUNT [--prefix P] [--snapshot S] [--keys K] --manifest
// DIR/<prefix>.manifest.json`, stopped by `cancel` exactly as Ctrl-C stops the command.
ForkCreateDone create_forks(tigris::Client& client, const ForkCreateArgs& args,
                            std::size_t concurrency, const std::atomic<bool>& cancel);
// How many requests a run of `args` sends when all goes well: snapshot, forks, keys.
std::size_t create_request_count(const ForkCreateArgs& args);

// `fork ls SOURCE`: {"source", "forks": [{"bucket", "snapshot", "created"}]}, by name.
Json list_forks(tigris::Client& client, const std::string& source);

// `fork head BUCKET...`: {"buckets": [{"bucket", "exists", ..., "fork_source", ...}]}.
Json head_buckets(tigris::Client& client, const std::vector<std::string>& buckets,
                  std::size_t concurrency);

// `fork diff`'s pieces: the fork's source and snapshot, and the changes after a key.
workflow::DiffTarget diff_target(tigris::Client& client, const std::string& fork);
void diff_after(tigris::Client& client, const workflow::DiffTarget& target,
                const std::string& prefix, const std::string& start_after,
                const std::function<bool(const workflow::Change&)>& on_change);
workflow::DiffStat diff_stat(tigris::Client& client, const workflow::DiffTarget& target,
                             const std::string& prefix);

struct MergeArgs {
  std::string fork;
  bool no_snapshot = false;
  std::string strategy = "refuse";
  std::vector<std::string> prefixes;  // empty: the whole fork (the merge request)
  std::size_t concurrency = 32;       // the promotion's copies in flight
  const std::atomic<bool>* cancel = nullptr;
};
// `fork merge FORK --yes [--no-snapshot] [--strategy S] [--prefix P...]`: {"fork", "into",
// "before_snapshot", "snapshot", "changes", "replaced"} (with prefixes, the promotion's
// document: "copied", "deleted", "skipped", "failed", ...). The same three-way check first: a
// conflict throws TforkError(conflict) naming the keys, unless `strategy` is "fork-wins".
// `check_parent` sees the parent before anything is written, and throws to refuse it. A
// promotion that did not finish (interrupted, some keys failed) returns its error beside the
// document.
struct MergeDone {
  Json document;
  std::optional<Error> error;
};
MergeDone merge_fork(tigris::Client& client, const MergeArgs& args,
                     const std::function<void(const std::string& parent)>& check_parent);

// `teardown FORK...` with each fork's expected source, or `teardown --source S --all`.
workflow::TeardownResult teardown_forks(tigris::Client& client,
                                        const std::vector<std::string>& forks,
                                        const std::map<std::string, std::string>& source_of,
                                        std::size_t concurrency, const std::atomic<bool>& cancel);
workflow::TeardownResult teardown_all(tigris::Client& client, const std::string& source,
                                      std::size_t concurrency, const std::atomic<bool>& cancel);
// The teardown document of cli.md §6.
Json teardown_json(const workflow::TeardownResult& result);

// `bucket ls --tree --forks-of BUCKET`: the nested document.
Json bucket_tree(tigris::Client& client, const std::string& bucket, std::size_t concurrency);

}  // namespace tfork::mcp::workflow_calls
