// SPDX-License-Identifier: Apache-2.0
#include "tfork/mcp/workflow_calls.hpp"

#include "tfork/commands/bucket.hpp"
#include "tfork/commands/fork.hpp"
#include "tfork/commands/snapshot.hpp"
#include "tfork/workflow/fork_batch.hpp"

#include <chrono>

namespace tfork::mcp::workflow_calls {
namespace {

// How a tool's batches run: the server's --concurrency, stopped by the call's cancellation as
// Ctrl-C stops the command; no progress sink (the tool counts answered requests itself, and
// stderr is the client's log, not a terminal).
workflow::BatchSettings settings(std::size_t concurrency, const std::atomic<bool>* cancel) {
  return workflow::BatchSettings{concurrency, cancel, nullptr};
}

std::int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Json take_snapshot(tigris::Client& client, const std::string& bucket,
                   const std::optional<std::string>& name) {
  const commands::snapshot::TakeOptions options{bucket, name};
  commands::snapshot::check(options);
  return commands::snapshot::to_json(commands::snapshot::run_snapshot_take(client, options));
}

Json list_snapshots(tigris::Client& client, const std::string& bucket) {
  return commands::snapshot::to_json(commands::snapshot::run_snapshot_ls(client, {bucket, 0}));
}

std::size_t create_request_count(const ForkCreateArgs& args) {
  const auto forks = static_cast<std::size_t>(args.count);
  return (args.snapshot.empty() ? 1 : 0) + forks + (args.keys == "none" ? 0 : forks);
}

ForkCreateDone create_forks(tigris::Client& client, const ForkCreateArgs& args,
                            std::size_t concurrency, const std::atomic<bool>& cancel) {
  const auto now = unix_ms();
  // The manifest is named after the prefix, which must be known first.
  const auto prefix = args.prefix.empty()
                          ? workflow::default_fork_prefix(args.source, now, args.count)
                          : args.prefix;
  workflow::ForkCreateRequest request;
  request.source = args.source;
  request.count = args.count;
  request.prefix = prefix;
  request.snapshot = args.snapshot;
  request.keys = args.keys;
  request.expires_in = args.expires_in;
  // Always a manifest, even with keys none: it is how fork_teardown and `teardown --manifest`
  // find everything the run may have made.
  request.manifest_path = args.manifest_dir / (prefix + ".manifest.json");
  auto plan = workflow::plan_fork_create(request, now);
  // The manifest is this call's until it ends (a second call naming it gets exit 6's error).
  const workflow::ManifestClaim claim(*plan.manifest_path);
  plan = workflow::plan_fork_create(request, now);
  auto outcome = workflow::run_fork_create(client, plan, settings(concurrency, &cancel));
  return ForkCreateDone{std::filesystem::absolute(*plan.manifest_path), std::move(outcome.manifest),
                        std::move(outcome.error)};
}

Json list_forks(tigris::Client& client, const std::string& source) {
  return commands::fork::to_json(commands::fork::run_fork_ls(client, source));
}

Json head_buckets(tigris::Client& client, const std::vector<std::string>& buckets,
                  std::size_t concurrency) {
  return commands::fork::to_json(
      commands::fork::run_fork_head(client, buckets, settings(concurrency, nullptr)));
}

workflow::DiffTarget diff_target(tigris::Client& client, const std::string& fork) {
  return workflow::diff_target(client, fork);
}

void diff_after(tigris::Client& client, const workflow::DiffTarget& target,
                const std::string& prefix, const std::string& start_after,
                const std::function<bool(const workflow::Change&)>& on_change) {
  workflow::stream_diff_after(client, target, prefix, start_after, on_change);
}

workflow::DiffStat diff_stat(tigris::Client& client, const workflow::DiffTarget& target,
                             const std::string& prefix) {
  return workflow::stream_diff(client, target, prefix, {});
}

MergeDone merge_fork(tigris::Client& client, const MergeArgs& args,
                     const std::function<void(const std::string& parent)>& check_parent) {
  commands::fork::MergeOptions options{args.fork, "", args.no_snapshot, args.strategy,
                                       args.prefixes};
  commands::fork::check_merge_options(options);
  const auto target = commands::fork::merge_target(client, options);
  check_parent(target.source);
  auto plan = commands::fork::plan_merge(client, target, options.prefixes, false);
  if (auto refusal = commands::fork::conflict_error(options, target.source, plan))
    throw TforkError(*refusal);
  if (!plan.prefixes.empty()) {
    // The same promotion as `fork merge --prefix`: its batch stopped by the call's cancellation.
    auto result = commands::fork::run_promotion(client, options, target, std::move(plan),
                                                settings(args.concurrency, args.cancel));
    return MergeDone{commands::fork::to_json(result), std::move(result.promotion->error)};
  }
  auto result = commands::fork::run_merge(client, options, target.source);
  result.plan = std::move(plan);
  return MergeDone{commands::fork::to_json(result), std::nullopt};
}

workflow::TeardownResult teardown_forks(tigris::Client& client,
                                        const std::vector<std::string>& forks,
                                        const std::map<std::string, std::string>& source_of,
                                        std::size_t concurrency, const std::atomic<bool>& cancel) {
  auto plan = workflow::plan_from_names(forks);
  // The workflow checks each fork's source again right before deleting it.
  for (auto& target : plan.targets)
    if (const auto found = source_of.find(target.bucket); found != source_of.end())
      target.expected_source = found->second;
  return workflow::run_teardown(client, plan, settings(concurrency, &cancel));
}

workflow::TeardownResult teardown_all(tigris::Client& client, const std::string& source,
                                      std::size_t concurrency, const std::atomic<bool>& cancel) {
  workflow::SourceSelection selection;
  selection.source = source;
  selection.all = true;
  auto plan = workflow::plan_from_source(client, selection, std::chrono::system_clock::now());
  return workflow::run_teardown(client, plan, settings(concurrency, &cancel));
}

Json teardown_json(const workflow::TeardownResult& result) {
  return workflow::to_json(result);
}

Json bucket_tree(tigris::Client& client, const std::string& bucket, std::size_t concurrency) {
  return commands::bucket::to_json(commands::bucket::run_bucket_tree(client, bucket, concurrency));
}

}  // namespace tfork::mcp::workflow_calls
