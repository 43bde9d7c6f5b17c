// SPDX-License-Identifier: Apache-2.0
// tfork fork diff | merge | rebase (cli.md §10): what an agent changed, keeping the winner,
// and moving a fork onto its parent's present. Registered under the `fork` group by
// register_fork (fork.cpp).
#include "tfork/cli/context.hpp"
#include "tfork/cli/help.hpp"
#include "tfork/cli/values.hpp"
#include "tfork/commands/fork.hpp"
#include "tfork/core/error.hpp"
#include "tfork/output/render.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/tigris/fork_ops.hpp"
#include "tfork/workflow/fork_diff.hpp"
#include "tfork/workflow/promote.hpp"
#include "tfork/workflow/send_once.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <string>

namespace tfork::commands::fork {
namespace {

tigris::BucketHead head_of(tigris::Client& client, const std::string& bucket) {
  return tigris::parse_head_bucket(
      tigris::expect_success(client.send(tigris::head_bucket(bucket)), "HeadBucket"));
}

std::string version_of(const http::Response& response, std::string_view operation) {
  auto version = tigris::parse_snapshot_version(response);
  if (!version)
    throw TforkError(ErrorKind::other, "NoSnapshotVersion",
                     std::string(operation) + " answered without X-Tigris-Snapshot-Version");
  return *version;
}

std::string before_merge_name(const std::string& fork) {
  return "before-merge " + fork;
}

}  // namespace

// ---- fork merge

std::vector<tigris::Operation> merge_operations(const MergeOptions& options,
                                                const std::string& parent) {
  std::vector<tigris::Operation> operations;
  if (!options.no_snapshot)
    operations.push_back(tigris::take_snapshot(parent, before_merge_name(options.fork)));
  operations.push_back(tigris::merge_fork(options.fork, parent));
  return operations;
}

void check_merge_options(const MergeOptions& options) {
  cli::require_bucket_name(options.fork, "fork");
  if (!options.into.empty()) cli::require_bucket_name(options.into, "parent");
  if (options.into == options.fork) usage_error("a fork cannot be merged into itself");
  // The snapshot's name carries the fork's, so it must make a valid snapshot name too.
  if (auto problem = tigris::snapshot_name_problem(before_merge_name(options.fork)))
    usage_error("cannot name the snapshot '" + before_merge_name(options.fork) + "': " + *problem);
  for (const auto& prefix : options.prefixes)
    if (auto problem = workflow::promotion_prefix_problem(prefix))
      usage_error("invalid --prefix '" + output::printable(prefix) + "': " + *problem);
}

workflow::DiffTarget merge_target(tigris::Client& client, const MergeOptions& options) {
  // One HeadBucket gives both what the merge checks (the fork's parent) and what the
  // three-way view lists (its base snapshot).
  workflow::DiffTarget target;
  try {
    target = workflow::diff_target(client, options.fork);
  } catch (const TforkError& error) {
    if (error.error().code != "NotAFork") throw;
    usage_error("bucket " + options.fork + " is not a fork: there is nothing to merge");
  }
  const std::string parent = options.into.empty() ? target.source : options.into;
  if (target.source != parent)
    usage_error(fmt::format("{} is a fork of {}, not of {}: a fork merges into its direct parent",
                            options.fork, target.source, parent));
  return target;
}

std::string merge_parent(tigris::Client& client, const MergeOptions& options) {
  return merge_target(client, options).source;
}

namespace {

void add_stat(workflow::DiffStat& total, const workflow::DiffStat& more) {
  total.added += more.added;
  total.modified += more.modified;
  total.deleted += more.deleted;
  total.bytes += more.bytes;
}

}  // namespace

MergePlan plan_merge(tigris::Client& client, const workflow::DiffTarget& target,
                     const std::vector<std::string>& prefixes, bool list_changes) {
  MergePlan plan;
  plan.prefixes = workflow::promotion_prefixes(prefixes);
  const bool promoting = !plan.prefixes.empty();
  const auto on_change = [&](const workflow::ThreeWayChange& change) {
    if (change.conflict && plan.conflicts.size() < k_listed_conflicts)
      plan.conflicts.push_back(change);
    if (list_changes && change.fork) plan.changes.push_back(change);
    if (!promoting) return;
    const auto action = workflow::promotion_action(change);
    if (!action) return;
    if (*action == workflow::PromotionAction::skip)
      ++plan.skipped;
    else
      plan.work.push_back({change.key, *action});
  };
  if (!promoting) {
    plan.stat = workflow::stream_three_way(client, target, {}, on_change);
    return plan;
  }
  // Sorted and none covering another, the prefixes list disjoint key ranges in key order.
  for (const auto& prefix : plan.prefixes) {
    const auto stat = workflow::stream_three_way(client, target, prefix, on_change);
    add_stat(plan.stat.fork, stat.fork);
    add_stat(plan.stat.parent, stat.parent);
    plan.stat.conflicts += stat.conflicts;
  }
  return plan;
}

namespace {

std::string_view kind_or_dash(const std::optional<workflow::ChangeKind>& kind) {
  return kind ? workflow::change_name(*kind) : std::string_view("-");
}

output::Json conflicts_json(const MergePlan& plan) {
  output::Json conflicts = output::Json::array();
  for (const auto& change : plan.conflicts)
    conflicts.push_back({{"key", change.key},
                         {"fork", kind_or_dash(change.fork)},
                         {"parent", kind_or_dash(change.parent)}});
  return conflicts;
}

output::Json changes_json(const workflow::DiffStat& stat) {
  return output::Json{
      {"added", stat.added}, {"modified", stat.modified}, {"deleted", stat.deleted}};
}

std::string conflict_rows(const MergePlan& plan) {
  output::Table table({"CONFLICT", "FORK", "PARENT"});
  for (const auto& change : plan.conflicts)
    table.row({printable_key(change.key), std::string(kind_or_dash(change.fork)),
               std::string(kind_or_dash(change.parent))});
  auto text = table.render();
  const auto listed = static_cast<std::int64_t>(plan.conflicts.size());
  if (plan.stat.conflicts > listed)
    text += fmt::format("... and {} more\n", plan.stat.conflicts - listed);
  return text;
}

std::string prefix_list(const std::vector<std::string>& prefixes) {
  std::string text;
  for (const auto& prefix : prefixes)
    text += (text.empty() ? "" : ", ") + printable_key(prefix);
  return text;
}

std::int64_t count_of(const MergePlan& plan, workflow::PromotionAction action) {
  return std::ranges::count_if(plan.work, [&](const auto& item) { return item.action == action; });
}

}  // namespace

output::Json to_json(const std::string& fork, const std::string& parent, const MergePlan& plan) {
  const bool promoting = !plan.prefixes.empty();
  output::Json keys = output::Json::array();
  for (const auto& change : plan.changes) {
    output::Json key{{"key", change.key},
                     {"change", workflow::change_name(*change.fork)},
                     {"conflict", change.conflict}};
    if (promoting) key["action"] = workflow::action_name(*workflow::promotion_action(change));
    keys.push_back(std::move(key));
  }
  output::Json document{{"fork", fork},
                        {"into", parent},
                        {"changes", changes_json(plan.stat.fork)},
                        {"parent_changes", changes_json(plan.stat.parent)},
                        {"conflict_count", plan.stat.conflicts},
                        {"conflicts", conflicts_json(plan)},
                        {"keys", std::move(keys)}};
  if (promoting) {
    document["prefixes"] = plan.prefixes;
    document["copy"] = count_of(plan, workflow::PromotionAction::copy);
    document["delete"] = count_of(plan, workflow::PromotionAction::remove);
    document["skip"] = plan.skipped;
  }
  return document;
}

std::string to_table(const std::string& fork, const std::string& parent, const MergePlan& plan) {
  const bool promoting = !plan.prefixes.empty();
  std::string text;
  if (!plan.changes.empty()) {
    output::Table table = promoting ? output::Table({"KEY", "CHANGE", "CONFLICT", "ACTION"})
                                    : output::Table({"KEY", "CHANGE", "CONFLICT"});
    for (const auto& change : plan.changes) {
      std::vector<std::string> row{printable_key(change.key),
                                   std::string(workflow::change_name(*change.fork)),
                                   change.conflict ? "yes" : "-"};
      if (promoting) row.emplace_back(workflow::action_name(*workflow::promotion_action(change)));
      table.row(row);
    }
    text += table.render();
  }
  const auto& theirs = plan.stat.parent;
  text += fmt::format(
      "merge {} into {}{}: {} added, {} modified, {} deleted; {} changed {} keys since the "
      "fork's snapshot; {} conflict{}\n",
      fork, parent, promoting ? " under " + prefix_list(plan.prefixes) : std::string(),
      plan.stat.fork.added, plan.stat.fork.modified, plan.stat.fork.deleted, parent,
      theirs.added + theirs.modified + theirs.deleted, plan.stat.conflicts,
      plan.stat.conflicts == 1 ? "" : "s");
  if (promoting)
    text += fmt::format("would copy {}, delete {}, skip {} (already in {})\n",
                        count_of(plan, workflow::PromotionAction::copy),
                        count_of(plan, workflow::PromotionAction::remove), plan.skipped, parent);
  if (plan.stat.conflicts > 0) text += conflict_rows(plan);
  return text;
}

std::optional<Error> conflict_error(const MergeOptions& options, const std::string& parent,
                                    const MergePlan& plan) {
  if (plan.stat.conflicts == 0 || options.strategy == "fork-wins") return std::nullopt;
  std::string keys;
  for (const auto& change : plan.conflicts)
    keys += (keys.empty() ? "" : ", ") + printable_key(change.key);
  const bool more = plan.stat.conflicts > static_cast<std::int64_t>(plan.conflicts.size());
  return Error{ErrorKind::conflict,
               "MergeConflict",
               fmt::format("{} key{} changed in both {} and {} since the fork's snapshot ({}{}); "
                           "nothing was merged: change them in the fork, or --strategy fork-wins "
                           "replaces {}'s changes",
                           plan.stat.conflicts, plan.stat.conflicts == 1 ? "" : "s", options.fork,
                           parent, keys, more ? ", ..." : "", parent),
               0,
               {}};
}

namespace {

// Whether a merge whose answer never came has happened: every key the fork changed since its
// snapshot is now in the parent as the fork has it (the three listings once more).
bool merge_landed(tigris::Client& client, const std::string& fork) {
  bool landed = true;
  workflow::stream_three_way(client, workflow::diff_target(client, fork), "",
                             [&](const workflow::ThreeWayChange& change) {
                               if (change.fork && (!change.parent || change.conflict))
                                 landed = false;
                             });
  return landed;
}

// The version an answer of a merge or rebase names; "" with a warning when it names none: the
// operation happened (it answered 2xx), and exit 0 says so (issue 23 §3).
std::string version_or_warn(const http::Response& response, std::string_view operation,
                            std::string_view bucket) {
  auto version = tigris::parse_snapshot_version(response);
  if (version) return *version;
  spdlog::warn(
      "{} of {} happened, but its answer named no X-Tigris-Snapshot-Version: the new "
      "version is not known (tfork snapshot ls {} lists the snapshots)",
      operation, bucket, bucket);
  return {};
}

}  // namespace

MergeResult run_merge(tigris::Client& client, const MergeOptions& options,
                      const std::string& parent) {
  MergeResult result{options.fork, parent, {}, {}, {}, false, std::nullopt};
  if (!options.no_snapshot) {
    result.before_snapshot = version_of(
        tigris::expect_success(
            workflow::send_take_snapshot(client, parent, before_merge_name(options.fork)),
            "CreateBucketSnapshot"),
        "CreateBucketSnapshot");
  }
  const auto answer = workflow::send_once(client, tigris::merge_fork(options.fork, parent),
                                          [&]() -> std::optional<std::string> {
                                            if (merge_landed(client, options.fork))
                                              return std::string();
                                            return std::nullopt;
                                          });
  result.snapshot =
      version_or_warn(tigris::expect_success(answer, "MergeFork"), "MergeFork", parent);
  return result;
}

namespace {

// Snapshot versions are decimal ns timestamps (tigris-wire §1.4): the longer is the later.
bool later_version(std::string_view a, std::string_view b) {
  return a.size() != b.size() ? a.size() > b.size() : a > b;
}

// The newest `before-merge <fork>` snapshot of the parent taken after the fork was made.
std::optional<std::string> earlier_before_merge(tigris::Client& client,
                                                const workflow::DiffTarget& target) {
  std::optional<std::string> newest;
  for (const auto& snapshot : tigris::list_all_snapshots(client, target.source)) {
    if (snapshot.name != before_merge_name(target.fork)) continue;
    if (!later_version(snapshot.version, target.snapshot)) continue;
    if (!newest || later_version(snapshot.version, *newest)) newest = snapshot.version;
  }
  return newest;
}

}  // namespace

MergeResult run_promotion(tigris::Client& client, const MergeOptions& options,
                          const workflow::DiffTarget& target, MergePlan plan,
                          const workflow::BatchSettings& settings) {
  MergeResult result{options.fork, target.source, {}, {}, {}, false, std::nullopt};
  if (!options.no_snapshot) {
    // Resuming (issue 23 §1): when some of the fork's changes are already in the parent, a
    // run of this promotion that was interrupted may have taken the snapshot; the newest of
    // that name since the fork was made holds the parent as it was before that run, so it is
    // kept rather than joined by a second one taken halfway through. With nothing left to
    // write, no snapshot is taken or named.
    if (plan.skipped > 0 && !plan.work.empty()) {
      if (auto earlier = earlier_before_merge(client, target)) {
        result.before_snapshot = std::move(*earlier);
        result.before_snapshot_reused = true;
      }
    }
    if (result.before_snapshot.empty() && !plan.work.empty()) {
      result.before_snapshot = version_of(
          tigris::expect_success(
              client.send(tigris::take_snapshot(target.source, before_merge_name(options.fork))),
              "CreateBucketSnapshot"),
          "CreateBucketSnapshot");
    }
  }
  result.promotion =
      workflow::run_promotion(client, target.fork, target.source, plan.work, settings);
  result.plan = std::move(plan);
  return result;
}

namespace {

output::Json promotion_json(const MergeResult& result) {
  const auto& done = *result.promotion;
  output::Json failed = output::Json::array();
  for (const auto& failure : done.failures) {
    output::Json row{{"key", failure.key},
                     {"action", workflow::action_name(failure.action)},
                     {"status", "failed"}};
    row["error"] = failure.error ? output::item_error_json(*failure.error) : output::Json();
    failed.push_back(std::move(row));
  }
  return output::Json{{"fork", result.fork},
                      {"into", result.into},
                      {"prefixes", result.plan.prefixes},
                      {"before_snapshot", output::json_or_null(result.before_snapshot)},
                      {"before_snapshot_reused", result.before_snapshot_reused},
                      {"snapshot", nullptr},
                      {"changes", changes_json(result.plan.stat.fork)},
                      {"replaced", result.plan.stat.conflicts},
                      {"copied", done.copied},
                      {"deleted", done.deleted + done.already_gone},
                      {"skipped", result.plan.skipped},
                      {"not_done", done.not_done},
                      {"failed", std::move(failed)}};
}

std::string promotion_table(const MergeResult& result) {
  const auto& done = *result.promotion;
  std::string text;
  if (!done.failures.empty()) {
    output::Table table({"KEY", "ACTION", "ERROR"});
    for (const auto& failure : done.failures)
      table.row({printable_key(failure.key), std::string(workflow::action_name(failure.action)),
                 failure.error ? output::item_error_text({output::Status::failed, failure.error})
                               : "(the cause below)"});
    text += table.render();
  }
  text +=
      fmt::format("promoted {} into {} under {}: {} copied, {} deleted, {} skipped (already in {})",
                  result.fork, result.into, prefix_list(result.plan.prefixes), done.copied,
                  done.deleted + done.already_gone, result.plan.skipped, result.into);
  if (!done.failures.empty()) text += fmt::format(", {} failed", done.failures.size());
  if (done.not_done > 0) text += fmt::format(", {} not done", done.not_done);
  text += "\n";
  if (!result.before_snapshot.empty())
    text += fmt::format("before: {}  (snapshot '{}'{}: fork it to undo the promotion)\n",
                        result.before_snapshot, before_merge_name(result.fork),
                        result.before_snapshot_reused ? ", taken by the interrupted run" : "");
  if (result.plan.stat.conflicts > 0)
    text += fmt::format("replaced {} of {}'s changes (--strategy fork-wins)\n",
                        result.plan.stat.conflicts, result.into);
  return text;
}

}  // namespace

output::Json to_json(const MergeResult& result) {
  if (result.promotion) return promotion_json(result);
  return output::Json{{"fork", result.fork},
                      {"into", result.into},
                      {"before_snapshot", output::json_or_null(result.before_snapshot)},
                      {"snapshot", output::json_or_null(result.snapshot)},
                      {"changes", changes_json(result.plan.stat.fork)},
                      // --strategy fork-wins: how many of the parent's changes the merge replaced.
                      {"replaced", result.plan.stat.conflicts}};
}

std::string to_table(const MergeResult& result) {
  if (result.promotion) return promotion_table(result);
  std::string text = fmt::format("merged {} into {}\n", result.fork, result.into);
  if (!result.before_snapshot.empty())
    text += fmt::format("before: {}  (snapshot '{}': fork it to undo the merge)\n",
                        result.before_snapshot, before_merge_name(result.fork));
  text += fmt::format("after:  {}\n",
                      result.snapshot.empty() ? "(the service named no version)" : result.snapshot);
  if (result.plan.stat.conflicts > 0)
    text += fmt::format("replaced {} of {}'s changes (--strategy fork-wins)\n",
                        result.plan.stat.conflicts, result.into);
  return text;
}

// ---- fork rebase

tigris::BucketHead rebase_head(tigris::Client& client, const std::string& fork) {
  auto head = head_of(client, fork);
  if (!head.fork_source)
    usage_error("bucket " + fork + " is not a fork: there is nothing to rebase");
  return head;
}

RebaseResult run_rebase(tigris::Client& client, const std::string& fork,
                        const tigris::BucketHead& head) {
  const auto& before = head.fork_source_snapshot;
  const auto answer =
      workflow::send_once(client, tigris::rebase_fork(fork), [&]() -> std::optional<std::string> {
        auto now = head_of(client, fork).fork_source_snapshot;
        if (now && now != before) return now;
        return std::nullopt;
      });
  const auto version =
      version_or_warn(tigris::expect_success(answer, "RebaseFork"), "RebaseFork", fork);
  return RebaseResult{fork, head.fork_source.value_or(""), version};
}

output::Json to_json(const RebaseResult& result) {
  return output::Json{{"fork", result.fork}, {"snapshot", output::json_or_null(result.snapshot)}};
}

std::string to_table(const RebaseResult& result) {
  if (result.snapshot.empty())
    return fmt::format("rebased {} onto the present of {}\n", result.fork, result.source);
  return fmt::format("rebased {} onto {} as of {}\n", result.fork, result.source, result.snapshot);
}

// ---- fork diff

namespace {

output::Json stat_json(const workflow::DiffStat& stat) {
  return output::Json{{"added", stat.added},
                      {"modified", stat.modified},
                      {"deleted", stat.deleted},
                      {"bytes", stat.bytes}};
}

// A streamed document's opening: the target's fork, source and snapshot, then `"<list>":[`,
// whose items and totals the caller writes.
void open_document(std::ostream& out, const workflow::DiffTarget& target, std::string_view list) {
  auto head =
      output::Json{{"fork", target.fork}, {"source", target.source}, {"snapshot", target.snapshot}}
          .dump();
  head.pop_back();  // the closing brace: the list and the totals follow
  out << head << ",\"" << list << "\":[";
}

}  // namespace

void write_diff(tigris::Client& client, const std::string& fork, const std::string& prefix,
                bool stat_only, bool json, std::ostream& out) {
  const auto target = workflow::diff_target(client, fork);
  if (json) {
    open_document(out, target, "changes");
  } else if (!stat_only) {
    out << fmt::format("{:<9}{:>12}  {}\n", "STATUS", "SIZE", "KEY");
  }
  std::size_t written = 0;
  const auto stat =
      workflow::stream_diff(client, target, prefix, [&](const workflow::Change& change) {
        if (stat_only) return;
        const auto status = workflow::change_name(change.kind);
        if (json) {
          out << (written++ == 0 ? "" : ",")
              << output::Json{{"key", change.key},
                              {"status", status},
                              {"size", change.size},
                              {"etag", change.etag}}
                     .dump();
        } else {
          out << fmt::format("{:<9}{:>12}  {}\n", status, change.size, printable_key(change.key));
        }
      });
  if (json) {
    out << "],\"stat\":" << stat_json(stat).dump() << "}\n";
  } else {
    out << fmt::format(
        "{} added, {} modified, {} deleted; {} bytes added or modified ({} against "
        "{} at {})\n",
        stat.added, stat.modified, stat.deleted, stat.bytes, target.fork, target.source,
        target.snapshot);
  }
  out.flush();
}

void write_three_way(tigris::Client& client, const std::string& fork, const std::string& prefix,
                     bool stat_only, bool json, std::ostream& out) {
  const auto target = workflow::diff_target(client, fork);
  if (json) {
    open_document(out, target, "keys");
  } else if (!stat_only) {
    out << fmt::format("{:<9}{:<9}{:<9}{}\n", "FORK", "PARENT", "CONFLICT", "KEY");
  }
  std::size_t written = 0;
  const auto name = [](const std::optional<workflow::ChangeKind>& kind) {
    return kind ? std::string(workflow::change_name(*kind)) : std::string("-");
  };
  const auto stat = workflow::stream_three_way(
      client, target, prefix, [&](const workflow::ThreeWayChange& change) {
        if (stat_only) return;
        if (json) {
          out << (written++ == 0 ? "" : ",")
              << output::Json{{"key", change.key},
                              {"fork", output::json_or_null(change.fork ? name(change.fork) : "")},
                              {"parent",
                               output::json_or_null(change.parent ? name(change.parent) : "")},
                              {"conflict", change.conflict}}
                     .dump();
        } else {
          out << fmt::format("{:<9}{:<9}{:<9}{}\n", name(change.fork), name(change.parent),
                             change.conflict ? "yes" : "-", printable_key(change.key));
        }
      });
  if (json) {
    out << "],\"fork_changes\":" << changes_json(stat.fork).dump()
        << ",\"parent_changes\":" << changes_json(stat.parent).dump()
        << ",\"conflict_count\":" << stat.conflicts << "}\n";
  } else {
    out << fmt::format(
        "{} changed {} keys and {} changed {} since {} ({}); {} conflict{}\n", target.fork,
        stat.fork.added + stat.fork.modified + stat.fork.deleted, target.source,
        stat.parent.added + stat.parent.modified + stat.parent.deleted, target.snapshot,
        "the fork's snapshot", stat.conflicts, stat.conflicts == 1 ? "" : "s");
  }
  out.flush();
}

std::string printable_key(std::string_view key) {
  std::string out;
  for (const char c : key) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out += c;
    }
  }
  return out;
}

// ---- the commands

cli::CommandResult run_fork_diff(const DiffOptions& options, cli::Context& context) {
  cli::require_bucket_name(options.fork, "fork");
  // Streamed to stdout as it is found rather than gathered into a document (cli.md §9:
  // memory independent of the object count), so the result carries nothing to print.
  if (options.against_parent)
    write_three_way(context.client(), options.fork, options.prefix, options.stat,
                    context.format() == output::Format::json, std::cout);
  else
    write_diff(context.client(), options.fork, options.prefix, options.stat,
               context.format() == output::Format::json, std::cout);
  return cli::CommandResult{};
}

cli::CommandResult run_fork_merge(const MergeOptions& options, cli::Context& context) {
  check_merge_options(options);
  auto& client = context.client();
  const auto target = merge_target(client, options);
  const auto& parent = target.source;
  // The three-way check first (issue 23 §1): reads only. A dry run shows the plan and stops.
  auto plan = plan_merge(client, target, options.prefixes, context.options.dry_run);
  if (context.options.dry_run)
    return cli::document(to_json(options.fork, parent, plan), to_table(options.fork, parent, plan));
  if (auto refusal = conflict_error(options, parent, plan)) {
    auto refused = cli::document(to_json(options.fork, parent, plan), conflict_rows(plan));
    refused.error = std::move(refusal);
    return refused;
  }
  if (!plan.prefixes.empty()) {
    const auto sends = static_cast<std::int64_t>(plan.work.size());
    context.confirm(
        fmt::format("Promote {} change{} of fork {} under {} into {}? This writes into {}{}", sends,
                    sends == 1 ? "" : "s", options.fork, prefix_list(plan.prefixes), parent, parent,
                    plan.stat.conflicts > 0
                        ? fmt::format(" and replaces {} of its changes", plan.stat.conflicts)
                        : std::string()));
    auto result = run_promotion(client, options, target, std::move(plan), context.batch_settings());
    auto promoted = cli::document(to_json(result), to_table(result));
    promoted.error = result.promotion->error;
    return promoted;
  }
  // Writing into a bucket every agent forked from is an operator's act (cli.md §10).
  context.confirm(fmt::format(
      "Merge fork {} into {}? This writes into {}{}", options.fork, parent, parent,
      plan.stat.conflicts > 0 ? fmt::format(" and replaces {} of its changes", plan.stat.conflicts)
                              : std::string()));
  auto result = run_merge(client, options, parent);
  result.plan = std::move(plan);
  return cli::document(to_json(result), to_table(result));
}

cli::CommandResult run_fork_rebase(const std::string& fork, cli::Context& context) {
  cli::require_bucket_name(fork, "fork");
  if (context.options.dry_run) {
    const tigris::Operation ops[] = {tigris::rebase_fork(fork)};
    return context.dry_run(ops);
  }
  auto& client = context.client();
  const auto head = rebase_head(client, fork);
  const auto& source = *head.fork_source;
  context.confirm(
      fmt::format("Rebase fork {} onto the present of {}? It will see {}'s "
                  "current data under its own changes",
                  fork, source, source));
  const auto result = run_rebase(client, fork, head);
  return cli::document(to_json(result), to_table(result));
}

// ---- registration

void add_fork_after(CLI::App& fork, cli::Context& context) {
  auto diff_options = std::make_shared<DiffOptions>();
  auto* diff = fork.add_subcommand("diff",
                                   "What an agent changed: FORK against its source at "
                                   "the fork's snapshot");
  diff->footer(
      "Lists added, modified (size or ETag differ) and deleted keys, in key order, as two\n"
      "listings stream past each other page by page: memory does not grow with the number of\n"
      "objects. --stat prints the counts and bytes only. Exit 6 when FORK is not a fork, 3 when\n"
      "it does not exist." +
      std::string("\n\n") + diff->get_footer());
  diff->add_option("FORK", diff_options->fork, "The fork to compare with its source")->required();
  diff->add_option("--prefix", diff_options->prefix, "Only keys starting with P");
  diff->add_flag("--stat", diff_options->stat, "Counts and bytes only");
  diff->add_flag("--against-parent", diff_options->against_parent,
                 "The three-way view a merge checks: each key the fork or its parent changed "
                 "since the fork's snapshot, and whether both did (a conflict)");
  cli::describe(*diff, cli::honours::client,
                {"tfork fork diff run-3", "tfork fork diff run-3 --against-parent --json"});
  cli::on_run(*diff, context,
              [diff_options, &context] { return run_fork_diff(*diff_options, context); });

  auto merge_options = std::make_shared<MergeOptions>();
  auto* merge = fork.add_subcommand("merge",
                                    "Merge a fork into its direct parent (after a "
                                    "'before-merge <fork>' snapshot of the parent)");
  merge->footer(
      "The fork's own changes since it was made land in the parent as new writes; a key that\n"
      "both changed takes the fork's version. FORK must be a direct fork of PARENT (checked\n"
      "first). Asks on a terminal; elsewhere needs --yes (exit 64). Prints the parent's\n"
      "version before (the snapshot; fork it to undo) and after the merge." +
      std::string("\n\n") + merge->get_footer());
  merge->add_option("FORK", merge_options->fork, "The fork to merge")->required();
  merge
      ->add_option("--into", merge_options->into,
                   "The parent (default: the fork's source; must be it)")
      ->type_name("BUCKET");
  merge->add_flag("--no-snapshot", merge_options->no_snapshot,
                  "Do not snapshot the parent first (the merge cannot be undone by forking)");
  merge
      ->add_option("--strategy", merge_options->strategy,
                   "refuse (default): a key changed on both sides stops the merge; fork-wins: "
                   "the fork's version replaces the parent's")
      ->transform(cli::one_of("--strategy", {"refuse", "fork-wins"}));
  merge
      ->add_option("--prefix", merge_options->prefixes,
                   "Promote only the fork's changes under P, by server-side copies and deletes "
                   "(repeatable)")
      ->type_name("P");
  cli::describe(
      *merge,
      cli::honours::client | cli::honours::batch | cli::honours::confirm | cli::honours::dry_run,
      {"tfork fork merge run-3 --dry-run", "tfork fork merge run-3 --yes",
       "tfork fork merge run-3 --prefix models/ --prefix eval/ --yes"});
  cli::on_run(*merge, context,
              [merge_options, &context] { return run_fork_merge(*merge_options, context); });

  auto rebase_fork = std::make_shared<std::string>();
  auto* rebase = fork.add_subcommand("rebase",
                                     "Move a fork onto its source's present; its own "
                                     "changes stay");
  rebase->footer(
      "Asks on a terminal; elsewhere needs --yes (exit 64). Prints the new snapshot "
      "version the fork is based on." +
      std::string("\n\n") + rebase->get_footer());
  rebase->add_option("FORK", *rebase_fork, "The fork to rebase")->required();
  cli::describe(*rebase, cli::honours::client | cli::honours::confirm | cli::honours::dry_run,
                {"tfork fork rebase run-3 --yes"});
  cli::on_run(*rebase, context,
              [rebase_fork, &context] { return run_fork_rebase(*rebase_fork, context); });
}

}  // namespace tfork::commands::fork
