// SPDX-License-Identifier: Apache-2.0
// tfork fork head | ls (cli.md §2, §6; tigris-wire.md §2.7, §2.8c). Registered under the
// `fork` group by register_fork (fork.cpp).
#include "tfork/cli/context.hpp"
#include "tfork/cli/help.hpp"
#include "tfork/commands/fork.hpp"
#include "tfork/core/error.hpp"
#include "tfork/output/render.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/workflow/batch.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace tfork::commands::fork {
namespace {

output::Json optional_json(const std::optional<std::string>& value) {
  return value ? output::Json(*value) : output::Json();
}

}  // namespace

// ---- fork head

// One HeadBucket per bucket, in parallel (the batch runner's phase "buckets"); a 404 is a row
// with exists:false. Any other failure (auth, network, ...) means the answers cannot be
// trusted: the first one, in input order, fails the command.
HeadResult run_fork_head(tigris::Client& client, const std::vector<std::string>& buckets,
                         const workflow::BatchSettings& settings) {
  using output::Status;
  std::vector<tigris::Operation> operations;
  for (const auto& bucket : buckets)
    operations.push_back(tigris::head_bucket(bucket));
  HeadResult result;
  for (const auto& bucket : buckets)
    result.buckets.push_back(HeadRow{bucket, false, {}});
  workflow::BatchRunner runner(client, settings);
  auto phase = runner.phase("buckets", buckets.size());
  const auto items =
      runner.run(&phase, std::move(operations), [&](std::size_t i, const http::Result& answer) {
        auto error = tigris::error_from_result(answer, "HeadBucket");
        if (!error) {
          result.buckets[i].exists = true;
          result.buckets[i].head = tigris::parse_head_bucket(*answer);
          return workflow::Verdict::done(Status::exists);
        }
        if (error->kind == ErrorKind::not_found) return workflow::Verdict::done(Status::not_found);
        return workflow::Verdict::done(Status::failed, std::move(error));
      });
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!items[i].decided) throw TforkError(workflow::interrupted_error());
    if (auto error = items[i].outcome.error) {
      error->message = fmt::format("{} ({})", error->message, buckets[i]);
      throw TforkError(std::move(*error));
    }
  }
  return result;
}

output::Json to_json(const HeadResult& result) {
  // A bucket that does not exist has no settings: null, as its table row says "-".
  auto known = [](const HeadRow& row, bool value) {
    return row.exists ? output::Json(value) : output::Json();
  };
  output::Json buckets = output::Json::array();
  for (const auto& row : result.buckets) {
    buckets.push_back(
        output::Json{{"bucket", row.bucket},
                     {"exists", row.exists},
                     {"snapshots_enabled", known(row, row.head.snapshots_enabled)},
                     {"fork_source", optional_json(row.head.fork_source)},
                     {"fork_source_snapshot", optional_json(row.head.fork_source_snapshot)},
                     {"is_fork_parent", known(row, row.head.is_fork_parent)}});
  }
  return output::Json{{"buckets", std::move(buckets)}};
}

std::string to_table(const HeadResult& result) {
  auto yes_no = [](bool value) { return std::string(value ? "yes" : "no"); };
  output::Table table(
      {"BUCKET", "EXISTS", "SNAPSHOTS", "FORK_SOURCE", "FORK_SNAPSHOT", "FORK_PARENT"});
  for (const auto& row : result.buckets) {
    if (!row.exists) {
      table.row({row.bucket, "no", "-", "-", "-", "-"});
      continue;
    }
    table.row({row.bucket, "yes", yes_no(row.head.snapshots_enabled),
               output::cell_or_dash(row.head.fork_source.value_or("")),
               output::cell_or_dash(row.head.fork_source_snapshot.value_or("")),
               yes_no(row.head.is_fork_parent)});
  }
  return table.render();
}

// cli.md leaves it open; tfork's rule: exit 3 when any bucket does not exist (after printing
// every row), so `tfork fork head b && …` reads as "b exists".
std::optional<Error> missing_error(const HeadResult& result) {
  std::vector<std::string> missing;
  for (const auto& row : result.buckets)
    if (!row.exists) missing.push_back(row.bucket);
  if (missing.empty()) return std::nullopt;
  std::string names;
  for (const auto& name : missing)
    names += (names.empty() ? "" : ", ") + name;
  return Error{ErrorKind::not_found,
               "NoSuchBucket",
               missing.size() == 1 ? "bucket " + names + " does not exist"
                                   : "buckets " + names + " do not exist",
               404,
               {}};
}

cli::CommandResult run_fork_head(const std::vector<std::string>& buckets, cli::Context& context) {
  for (const auto& bucket : buckets)
    cli::require_bucket_name(bucket);
  const auto result = run_fork_head(context.client(), buckets, context.batch_settings());
  auto outcome = cli::document(to_json(result), to_table(result));
  outcome.error = missing_error(result);
  return outcome;
}

// ---- fork ls

cli::CommandResult run_fork_ls(const std::string& source, cli::Context& context) {
  cli::require_bucket_name(source);
  const auto result = run_fork_ls(context.client(), source);
  if (result.lag_warning) spdlog::warn("{}", *result.lag_warning);
  auto outcome = cli::document(to_json(result), to_table(result));
  if (result.forks.empty()) outcome.notice = "No forks of bucket " + result.source + ".";
  return outcome;
}

ListResult run_fork_ls(tigris::Client& client, const std::string& source,
                       std::chrono::system_clock::time_point now) {
  ListResult result{source, tigris::find_forks(client, source), {}, now};
  std::ranges::sort(result.forks, output::natural_less, &tigris::FoundFork::bucket);
  result.expires_at.resize(result.forks.size());
  // The source's snapshots name each fork's expiry (issue 23 §2), and one taken a moment ago
  // means forks made from it may be missing from the listing (tigris-wire §10).
  std::optional<std::vector<tigris::Snapshot>> snapshots;
  try {
    snapshots = tigris::list_all_snapshots(client, source);
  } catch (const TforkError& error) {
    if (error.error().kind == ErrorKind::interrupted) throw;
    if (!result.forks.empty())
      spdlog::warn("could not list the snapshots of {}, so no expiry is shown: {}", source,
                   error.error().message);
  }
  if (snapshots) {
    const auto expiries = workflow::snapshot_expiries(*snapshots);
    for (std::size_t i = 0; i < result.forks.size(); ++i)
      if (auto found = expiries.find(result.forks[i].snapshot); found != expiries.end())
        result.expires_at[i] = found->second;
    result.lag_warning = tigris::listing_lag_warning(source, *snapshots, now);
  }
  // An empty listing cannot tell "no forks" from a mistyped name: ask the source itself.
  if (result.forks.empty() && !snapshots) {
    if (auto error =
            tigris::error_from_result(client.send(tigris::head_bucket(source)), "HeadBucket")) {
      if (error->kind == ErrorKind::not_found)
        error->message = "bucket " + source + " does not exist";
      throw TforkError(std::move(*error));
    }
  }
  return result;
}

std::string expires_cell(const std::optional<workflow::ExpiryTime>& expires_at,
                         std::chrono::system_clock::time_point now) {
  if (!expires_at) return "-";
  const auto when = output::table_time(workflow::expiry_text(*expires_at));
  return workflow::is_expired(*expires_at, now) ? when + " expired" : when;
}

output::Json to_json(const ListResult& result) {
  output::Json forks = output::Json::array();
  for (std::size_t i = 0; i < result.forks.size(); ++i) {
    const auto& fork = result.forks[i];
    output::Json expires_at;
    bool expired = false;
    if (i < result.expires_at.size() && result.expires_at[i]) {
      expires_at = workflow::expiry_text(*result.expires_at[i]);
      expired = workflow::is_expired(*result.expires_at[i], result.now);
    }
    forks.push_back(output::Json{{"bucket", fork.bucket},
                                 {"snapshot", output::json_or_null(fork.snapshot)},
                                 {"created", output::json_time(fork.created)},
                                 {"expires_at", std::move(expires_at)},
                                 {"expired", expired}});
  }
  return output::Json{{"source", result.source}, {"forks", std::move(forks)}};
}

std::string to_table(const ListResult& result) {
  output::Table table({"BUCKET", "SNAPSHOT", "CREATED", "EXPIRES"});
  for (std::size_t i = 0; i < result.forks.size(); ++i) {
    const auto& fork = result.forks[i];
    table.row({fork.bucket, output::cell_or_dash(fork.snapshot), output::table_time(fork.created),
               expires_cell(i < result.expires_at.size() ? result.expires_at[i] : std::nullopt,
                            result.now)});
  }
  return table.render();
}

void add_fork_head(CLI::App& fork, cli::Context& context) {
  auto buckets = std::make_shared<std::vector<std::string>>();
  auto* head = fork.add_subcommand(
      "head", "Show buckets' fork and snapshot metadata (HeadBucket, in parallel)");
  head->footer(
      "Reports each bucket's fork source, source snapshot and whether it is a fork parent.\n"
      "Exit 0 when every bucket exists; 3 when any does not (its row says \"exists\": false)." +
      std::string("\n\n") + head->get_footer());
  head->add_option("BUCKET", *buckets, "Buckets to inspect")->required();
  cli::describe(*head, cli::honours::client | cli::honours::batch,
                {"tfork fork head run-1 run-2", "tfork fork head run-1 --json"});
  cli::on_run(*head, context, [&context, buckets] { return run_fork_head(*buckets, context); });
}

void add_fork_ls(CLI::App& fork, cli::Context& context) {
  auto source = std::make_shared<std::string>();
  auto* ls =
      fork.add_subcommand("ls", "List the forks of a bucket (ListBuckets with X-Tigris-Fork)");
  ls->footer(
      "On a gateway that returns no fork info, falls back to the full bucket listing filtered\n"
      "on each bucket's fork parents. EXPIRES: when the fork expires (fork create\n"
      "--expires-in, read from the name of its snapshot), marked 'expired' once passed\n"
      "(\"expires_at\" and \"expired\" in JSON). Exit 3 when SOURCE does not exist." +
      std::string("\n\n") + ls->get_footer());
  ls->add_option("SOURCE", *source, "Bucket whose forks to list")->required();
  cli::describe(*ls, cli::honours::client, {"tfork fork ls training-data"});
  cli::on_run(*ls, context, [&context, source] { return run_fork_ls(*source, context); });
}

}  // namespace tfork::commands::fork
