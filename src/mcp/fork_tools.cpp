// SPDX-License-Identifier: Apache-2.0
// The snapshot and fork tools of `tfork mcp` (cli.md §13): their schemas and descriptions, the
// server's reach checked first, then the workflow through workflow_calls.
#include "tfork/cli/command.hpp"
#include "tfork/mcp/toolbox.hpp"
#include "tfork/mcp/workflow_calls.hpp"
#include "tfork/mcp/workspace.hpp"
#include "tfork/output/item_status.hpp"
#include "tfork/output/render.hpp"
#include "tfork/workflow/fork_batch.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <map>

namespace tfork::mcp {
namespace {

constexpr std::int64_t k_default_page = 100;
constexpr std::int64_t k_default_diff_page = 200;
constexpr std::int64_t k_max_page = 1000;

// The arguments the schema already checked, read with their defaults.
std::string text_arg(const Json& arguments, const char* name, std::string fallback = {}) {
  const auto found = arguments.find(name);
  return found == arguments.end() ? fallback : found->get<std::string>();
}
std::int64_t int_arg(const Json& arguments, const char* name, std::int64_t fallback) {
  const auto found = arguments.find(name);
  return found == arguments.end() ? fallback : found->get<std::int64_t>();
}
bool bool_arg(const Json& arguments, const char* name) {
  const auto found = arguments.find(name);
  return found != arguments.end() && found->get<bool>();
}

// Where a page starts: the "after" of the cursor given, checked to belong to `listing` (the same
// bucket, prefix, ...); "" without a cursor.
std::string position_after(const Json& arguments, const Json& listing) {
  if (!arguments.contains("cursor")) return {};
  auto position = read_cursor(arguments["cursor"].get<std::string>());
  const auto after = position.value("after", "");
  position.erase("after");
  if (position != listing || after.empty()) read_cursor("");  // another listing's cursor
  return after;
}

// `listing` with one page of `items` (in the listing's order) as `name`: the items whose
// `field` follows `after`, at most `limit`, and the cursor to the next page (null on the last).
Json paged(const Json& listing, const char* name, Json items, const char* field,
           const std::string& after, std::int64_t limit,
           const std::function<bool(const std::string&, const std::string&)>& precedes) {
  Json page = Json::array();
  Json next = nullptr;
  for (auto& item : items) {
    if (!after.empty() && !precedes(after, item[field].get<std::string>())) continue;
    if (static_cast<std::int64_t>(page.size()) == limit) {
      auto position = listing;
      position["after"] = page.back()[field];
      next = make_cursor(position);
      break;
    }
    page.push_back(std::move(item));
  }
  auto document = listing;
  document[name] = std::move(page);
  document["next_cursor"] = std::move(next);
  return document;
}

// fork_merge and fork_teardown (cli.md §13): only with confirm: true, which the model may only
// send after the user agreed.
void require_confirmation(const Json& arguments, std::string_view what) {
  if (bool_arg(arguments, "confirm")) return;
  throw TforkError(ErrorKind::usage, "NotConfirmed",
                   fmt::format("{}; nothing was changed. Ask the user first, then call again "
                               "with confirm: true",
                               what));
}

Json snapshot_entry() {
  return Json{{"type", "object"},
              {"properties",
               {{"version", schema::text("The snapshot's version (ns timestamp)")},
                {"name", schema::nullable_text("Its name")},
                {"created", schema::nullable_text("When it was taken (RFC 3339 UTC)")},
                {"forks", schema::nullable("integer", "Existing forks made from it")}}}};
}

Json fork_row() {
  return Json{{"type", "object"},
              {"properties",
               {{"bucket", schema::text("The fork")},
                {"status", schema::text("created, exists, failed, rolled-back, pending or "
                                        "not-attempted")},
                {"access_key_id", schema::nullable_text("Its scoped key's id (never the secret)")},
                {"role", schema::nullable_text("Editor or ReadOnly; null with keys none")},
                {"error", Json{{"type", "object"}}}}}};
}

// ---- snapshots

Tool snapshot_take_tool(const ServerConfig& config) {
  const bool agent = std::holds_alternative<AgentMode>(config.mode);
  Tool tool;
  tool.name = "snapshot_take";
  tool.title = "Take a snapshot";
  tool.description =
      agent ? "Take a snapshot of your fork: a named point in time you can compare against or "
              "restore later. Take one before a risky change. Returns the snapshot's version."
            : "Take a snapshot of a source or of one of its forks: a point in time that forks can "
              "be made from (fork_create takes one by itself when not given `snapshot`). Returns "
              "the version. Changes no object.";
  Json properties{{"name", schema::text("A name for it (printable ASCII, no ';')")}};
  properties["bucket"] =
      schema::bucket(agent ? "Your fork (the default)" : "A source or a fork of one");
  tool.input_schema = schema::object(
      properties, agent ? std::vector<std::string>{} : std::vector<std::string>{"bucket"});
  tool.output_schema = schema::document({{"bucket", schema::text("The bucket")},
                                         {"version", schema::text("The snapshot's version")},
                                         {"name", schema::nullable_text("Its name")}},
                                        {"bucket", "version"});
  tool.hints = {.read_only = false, .destructive = false, .idempotent = false};
  tool.run = [&config](const Json& arguments, CallContext& call) {
    Workspace workspace(config, call);
    const auto bucket = workspace.bucket_argument(arguments, "bucket");
    workspace.reach(bucket);
    std::optional<std::string> name;
    if (arguments.contains("name")) name = arguments["name"].get<std::string>();
    return workflow_calls::take_snapshot(workspace.client(), bucket, name);
  };
  return tool;
}

// Versions are ns decimals: the longer string is the later one (tigris-wire.md §1.4).
bool newer(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() > b.size() : a > b;
}

Tool snapshot_list_tool(const ServerConfig& config) {
  const bool agent = std::holds_alternative<AgentMode>(config.mode);
  Tool tool;
  tool.name = "snapshot_list";
  tool.title = "List snapshots";
  tool.description = std::string("List the snapshots of ") +
                     (agent ? "your fork" : "a source or of one of its forks") +
                     ", newest first, with how many existing forks were made from each. Paged: "
                     "pass next_cursor back as cursor for more.";
  Json properties{{"cursor", schema::text("next_cursor of the previous page")},
                  {"limit", schema::integer("Snapshots per page (default 100)", 1, k_max_page)}};
  properties["bucket"] =
      schema::bucket(agent ? "Your fork (the default)" : "A source or a fork of one");
  tool.input_schema = schema::object(
      properties, agent ? std::vector<std::string>{} : std::vector<std::string>{"bucket"});
  tool.output_schema =
      schema::document({{"bucket", schema::text("The bucket")},
                        {"snapshots", Json{{"type", "array"}, {"items", snapshot_entry()}}},
                        {"next_cursor", schema::next_cursor()}},
                       {"bucket", "snapshots", "next_cursor"});
  tool.hints = {.read_only = true, .destructive = false, .idempotent = true};
  tool.run = [&config](const Json& arguments, CallContext& call) {
    Workspace workspace(config, call);
    const auto bucket = workspace.bucket_argument(arguments, "bucket");
    workspace.reach(bucket);
    const Json listing{{"bucket", bucket}};
    const auto after = position_after(arguments, listing);
    auto document = workflow_calls::list_snapshots(workspace.client(), bucket);
    return paged(listing, "snapshots", std::move(document["snapshots"]), "version", after,
                 int_arg(arguments, "limit", k_default_page), newer);
  };
  return tool;
}

// ---- forks

Json fork_summary(const workflow_calls::ForkCreateDone& done) {
  // The manifest without the secrets: the model never sees a key's secret (cli.md §13).
  Json forks = Json::array();
  for (const auto& fork : done.record.forks) {
    Json row{{"bucket", fork.bucket},
             {"status", output::status_name(fork.status)},
             {"access_key_id", output::json_or_null(fork.access_key_id)},
             {"role", fork.role ? Json(iam::role_name(*fork.role)) : Json()}};
    if (fork.error) row["error"] = output::item_error_json(*fork.error);
    forks.push_back(std::move(row));
  }
  return Json{
      {"manifest", done.manifest.string()},
      {"source", done.record.source},
      {"snapshot", output::json_or_null(done.record.snapshot)},
      {"snapshot_taken", done.record.snapshot_taken},
      {"forks", std::move(forks)},
      {"expires_at",
       done.record.expires_at ? Json(workflow::expiry_text(*done.record.expires_at)) : Json()},
      {"agents", fmt::format("Each fork's secret key is only in the manifest (mode 0600). Give a "
                             "sub-agent its fork with `tfork mcp --manifest {} --fork <n>` (an MCP "
                             "server for that fork alone) or run it under `tfork fork exec "
                             "--manifest {} -- <command>`",
                             done.manifest.string(), done.manifest.string())}};
}

Tool fork_create_tool(const ServerConfig& config) {
  Tool tool;
  tool.name = "fork_create";
  tool.title = "Create forks";
  tool.description =
      "Create `count` copy-on-write forks of a source, all from one snapshot (taken now unless "
      "`snapshot` names one), each with its own access key scoped to that fork. Use it to give "
      "each sub-agent or experiment its own copy of the data: nothing done in a fork reaches the "
      "source. Writes a manifest (mode 0600) that holds the keys' secrets and returns its path, "
      "the forks and their key ids, never a secret. Forks are named <prefix>-1 ... <prefix>-N. "
      "Sends progress notifications when asked. Remove the forks with fork_teardown when done.";
  tool.input_schema = schema::object(
      {{"source", schema::bucket("The bucket to fork: a source or a fork of one")},
       {"count", schema::integer("How many forks", 1, workflow::k_max_forks)},
       {"prefix", schema::text("Fork names are <prefix>-1 ... <prefix>-N (default "
                               "<source>-fork-<unix-ms>)")},
       {"snapshot", schema::text("Fork from this snapshot (a version or a name) instead of "
                                 "taking one")},
       {"keys", Json{{"type", "string"},
                     {"enum", {"editor", "readonly", "none"}},
                     {"description",
                      "The key minted per fork: editor (read and write its fork, "
                      "the default), readonly, or none"}}},
       {"expires_in",
        schema::text("The forks expire this long from now (1s up to 366d: 90s, 30m, 12h, 7d, "
                     "2w), recorded in the name of the snapshot taken; not with `snapshot`")}},
      {"source", "count"});
  tool.output_schema = schema::document(
      {{"manifest", schema::text("The manifest's path: `tfork teardown --manifest` and "
                                 "`tfork mcp --manifest` read it")},
       {"source", schema::text("The source")},
       {"snapshot", schema::nullable_text("The snapshot every fork was made from")},
       {"snapshot_taken", Json{{"type", "boolean"}}},
       {"forks", Json{{"type", "array"}, {"items", fork_row()}}},
       {"expires_at", schema::nullable_text("When the forks expire (RFC 3339 UTC), or null")},
       {"agents", schema::text("How sub-agents get their fork")}},
      {"manifest", "source", "forks"});
  tool.hints = {.read_only = false, .destructive = false, .idempotent = false};
  tool.run = [&config](const Json& arguments, CallContext& call) {
    Workspace workspace(config, call);
    workflow_calls::ForkCreateArgs args;
    args.source = text_arg(arguments, "source");
    args.count = static_cast<int>(int_arg(arguments, "count", 0));
    args.prefix = text_arg(arguments, "prefix");
    args.snapshot = text_arg(arguments, "snapshot");
    args.keys = text_arg(arguments, "keys", "editor");
    if (arguments.contains("expires_in")) args.expires_in = text_arg(arguments, "expires_in");
    args.manifest_dir = std::get<OperatorMode>(config.mode).manifest_dir;
    workspace.reach(args.source);
    const auto total = workflow_calls::create_request_count(args);
    auto done_requests = std::make_shared<std::atomic<std::size_t>>(0);
    workspace.on_request_done([&call, done_requests, total] {
      const auto done = ++*done_requests;
      call.progress(static_cast<double>(std::min(done, total)), static_cast<double>(total),
                    fmt::format("{} of {} requests answered", std::min(done, total), total));
    });
    auto done = workflow_calls::create_forks(workspace.client(), args, workspace.concurrency(),
                                             workspace.cancelled());
    if (workspace.cancelled().load()) {
      spdlog::warn(
          "fork_create cancelled: manifest {} records every fork that may exist; "
          "fork_teardown or `tfork teardown --manifest {}` removes them",
          done.manifest.string(), done.manifest.string());
    }
    auto summary = fork_summary(done);
    if (done.error) {
      auto error = *done.error;
      error.message += "; manifest " + done.manifest.string();
      throw ToolFailure(std::move(error), std::move(summary));
    }
    return summary;
  };
  return tool;
}

// The one source a tool means when its argument is left out.
std::string source_argument(Workspace& workspace, const Json& arguments) {
  if (arguments.contains("source")) return arguments["source"].get<std::string>();
  if (workspace.sources().size() == 1) return workspace.sources().front();
  usage_error("'source' is required: this server has several sources");
}

Tool fork_list_tool(const ServerConfig& config) {
  Tool tool;
  tool.name = "fork_list";
  tool.title = "List forks";
  tool.description =
      "List the forks of a source (or of a fork), by name, with the snapshot each was made from "
      "and when. Paged: pass next_cursor back as cursor for more.";
  tool.input_schema =
      schema::object({{"source", schema::bucket("Whose forks (default: the only source)")},
                      {"cursor", schema::text("next_cursor of the previous page")},
                      {"limit", schema::integer("Forks per page (default 100)", 1, k_max_page)}});
  tool.output_schema = schema::document(
      {{"source", schema::text("The bucket")},
       {"forks", Json{{"type", "array"},
                      {"items", Json{{"type", "object"},
                                     {"properties",
                                      {{"bucket", schema::text("The fork")},
                                       {"snapshot", schema::nullable_text("Made from")},
                                       {"created", schema::nullable_text("RFC 3339 UTC")}}}}}}},
       {"next_cursor", schema::next_cursor()}},
      {"source", "forks", "next_cursor"});
  tool.hints = {.read_only = true, .destructive = false, .idempotent = true};
  tool.run = [&config](const Json& arguments, CallContext& call) {
    Workspace workspace(config, call);
    const auto source = source_argument(workspace, arguments);
    workspace.reach(source);
    const Json listing{{"source", source}};
    const auto after = position_after(arguments, listing);
    auto document = workflow_calls::list_forks(workspace.client(), source);
    return paged(
        listing, "forks", std::move(document["forks"]), "bucket", after,
        int_arg(arguments, "limit", k_default_page),
        [](const std::string& a, const std::string& b) { return output::natural_less(a, b); });
  };
  return tool;
}

Tool fork_head_tool(const ServerConfig& config) {
  Tool tool;
  tool.name = "fork_head";
  tool.title = "Inspect buckets";
  tool.description =
      "Show whether buckets exist and their fork metadata: the source and snapshot a fork was "
      "made from, whether it has forks of its own, whether snapshots are enabled.";
  tool.input_schema =
      schema::object({{"buckets", Json{{"type", "array"},
                                       {"items", schema::bucket("A source or a fork of one")},
                                       {"minItems", 1},
                                       {"maxItems", 100},
                                       {"description", "The buckets to inspect"}}}},
                     {"buckets"});
  tool.output_schema = schema::document(
      {{"buckets",
        Json{{"type", "array"},
             {"items",
              Json{{"type", "object"},
                   {"properties",
                    {{"bucket", schema::text("The bucket")},
                     {"exists", Json{{"type", "boolean"}}},
                     {"snapshots_enabled",
                      schema::nullable("boolean", "null when it does not exist")},
                     {"fork_source", schema::nullable_text("The bucket it is a fork of")},
                     {"fork_source_snapshot",
                      schema::nullable_text("The snapshot it was made from")},
                     {"is_fork_parent", schema::nullable("boolean", "Whether it has forks")}}}}}}}},
      {"buckets"});
  tool.hints = {.read_only = true, .destructive = false, .idempotent = true};
  tool.run = [&config](const Json& arguments, CallContext& call) {
    Workspace workspace(config, call);
    std::vector<std::string> buckets;
    for (const auto& bucket : arguments["buckets"]) {
      buckets.push_back(bucket.get<std::string>());
      cli::require_bucket_name(buckets.back());
    }
    auto document =
        workflow_calls::head_buckets(workspace.client(), buckets, workspace.concurrency());
    // The answers show each fork's source: one within reach, or the chain is followed.
    for (const auto& row : document["buckets"]) {
      const auto bucket = row["bucket"].get<std::string>();
      if (!row["exists"].get<bool>() || workspace.is_source(bucket)) continue;
      if (row["fork_source"].is_string() &&
          workspace.is_source(row["fork_source"].get<std::string>()))
        continue;
      workspace.reach(bucket);
    }
    return document;
  };
  return tool;
}

Tool fork_diff_tool(const ServerConfig& config) {
  const bool agent = std::holds_alternative<AgentMode>(config.mode);
  Tool tool;
  tool.name = "fork_diff";
  tool.title = "What a fork changed";
  tool.description =
      std::string("List what ") + (agent ? "you changed in your fork" : "a fork changed") +
      " since it was made: keys added, modified (size or ETag differ) and deleted, in key "
      "order, against the source as of the fork's snapshot. Paged (next_cursor); `stat_only` "
      "gives just the counts and bytes.";
  Json properties{{"prefix", schema::text("Only keys starting with this")},
                  {"cursor", schema::text("next_cursor of the previous page")},
                  {"limit", schema::integer("Changes per page (default 200)", 1, k_max_page)},
                  {"stat_only", schema::boolean("Only the totals (reads the whole diff)")}};
  properties["fork"] = schema::bucket(agent ? "Your fork (the default)" : "The fork");
  tool.input_schema = schema::object(
      properties, agent ? std::vector<std::string>{} : std::vector<std::string>{"fork"});
  tool.output_schema = schema::document(
      {{"fork", schema::text("The fork")},
       {"source", schema::text("Its source")},
       {"snapshot", schema::text("The source's snapshot it was made from")},
       {"prefix", schema::text("The prefix asked for")},
       {"changes",
        Json{{"type", "array"},
             {"items", Json{{"type", "object"},
                            {"properties",
                             {{"key", schema::text("The object key")},
                              {"status", Json{{"type", "string"},
                                              {"enum", {"added", "modified", "deleted"}}}},
                              {"size", Json{{"type", "integer"}}},
                              {"etag", schema::text("ETag")}}}}}}},
       {"stat", schema::nullable("object", "With stat_only: added, modified, deleted, bytes")},
       {"next_cursor", schema::next_cursor()}},
      {"fork", "source", "snapshot", "changes", "next_cursor"});
  tool.hints = {.read_only = true, .destructive = false, .idempotent = true};
  tool.run = [&config](const Json& arguments, CallContext& call) {
    Workspace workspace(config, call);
    const auto fork = workspace.bucket_argument(arguments, "fork");
    workspace.reach(fork);
    const auto prefix = text_arg(arguments, "prefix");
    const Json listing{{"fork", fork}, {"prefix", prefix}};
    const auto after = position_after(arguments, listing);
    auto target = workflow_calls::diff_target(workspace.client(), fork);
    // The fork's key reads the fork only; the fork as of its snapshot is the source's data.
    if (workspace.agent_mode()) target.base_bucket = fork;
    Json document{{"fork", target.fork},
                  {"source", target.source},
                  {"snapshot", target.snapshot},
                  {"prefix", prefix}};
    if (bool_arg(arguments, "stat_only")) {
      const auto stat = workflow_calls::diff_stat(workspace.client(), target, prefix);
      document["changes"] = Json::array();
      document["stat"] = Json{{"added", stat.added},
                              {"modified", stat.modified},
                              {"deleted", stat.deleted},
                              {"bytes", stat.bytes}};
      document["next_cursor"] = nullptr;
      return document;
    }
    const auto limit = static_cast<std::size_t>(int_arg(arguments, "limit", k_default_diff_page));
    Json changes = Json::array();
    bool more = false;
    workflow_calls::diff_after(
        workspace.client(), target, prefix, after, [&](const workflow::Change& change) {
          if (changes.size() == limit) {
            more = true;
            return false;
          }
          changes.push_back(Json{{"key", change.key},
                                 {"status", workflow::change_name(change.kind)},
                                 {"size", change.size},
                                 {"etag", change.etag}});
          return true;
        });
    Json next = nullptr;
    if (more) {
      auto position = listing;
      position["after"] = changes.back()["key"];
      next = make_cursor(position);
    }
    document["changes"] = std::move(changes);
    document["stat"] = nullptr;
    document["next_cursor"] = std::move(next);
    return document;
  };
  return tool;
}

Tool fork_merge_tool(const ServerConfig& config) {
  Tool tool;
  tool.name = "fork_merge";
  tool.title = "Merge a fork into its parent";
  tool.description =
      "Merge a fork's changes into the bucket it was forked from (its source): the only tool "
      "that writes into a source. A snapshot of the parent named 'before-merge <fork>' is taken "
      "first, so the merge can be undone by forking that snapshot. A key the parent also changed "
      "since the fork was made stops the merge (the keys are named) unless strategy is "
      "fork-wins. DESTRUCTIVE for the parent: "
      "never call it on your own initiative. Ask the user first and pass confirm: true only "
      "after they said yes.";
  tool.input_schema = schema::object(
      {{"fork", schema::bucket("The fork to merge (a direct fork of its parent)")},
       {"confirm", schema::boolean("true only after the user agreed to this merge")},
       {"no_snapshot", schema::boolean("Skip the 'before-merge' snapshot (the merge then cannot "
                                       "be undone)")},
       {"strategy", Json{{"type", "string"},
                         {"enum", {"refuse", "fork-wins"}},
                         {"description",
                          "refuse (the default): a key the parent also changed since the fork "
                          "was made stops the merge, naming the keys; fork-wins: merged anyway, "
                          "the parent's changes replaced (only when the user said so)"}}},
       {"prefix",
        Json{{"anyOf",
              {Json{{"type", "string"}, {"minLength", 1}},
               Json{{"type", "array"},
                    {"items", Json{{"type", "string"}, {"minLength", 1}}},
                    {"minItems", 1}}}},
             {"description",
              "Promote only the fork's changes under this key prefix (or these), copied and "
              "deleted key by key, instead of merging the whole fork"}}}},
      {"fork"});
  tool.output_schema = schema::document(
      {{"fork", schema::text("The fork")},
       {"into", schema::text("The parent it was merged into")},
       {"before_snapshot", schema::nullable_text("The parent's version before the merge")},
       {"snapshot",
        schema::nullable_text(
            "The parent's version after the merge; null with prefix (no merge request is sent)")},
       {"changes", Json{{"type", "object"},
                        {"description", "The fork's changes merged: added, modified, deleted"}}},
       {"replaced", Json{{"type", "integer"},
                         {"description",
                          "How many of the parent's own changes the merge "
                          "replaced (strategy fork-wins)"}}},
       {"copied", schema::nullable("integer", "With prefix: the objects copied into the parent")},
       {"deleted", schema::nullable("integer", "With prefix: the objects deleted in the parent")},
       {"skipped",
        schema::nullable("integer", "With prefix: changes the parent already had (not sent)")}},
      {"fork", "into"});
  tool.hints = {.read_only = false, .destructive = true, .idempotent = false};
  tool.run = [&config](const Json& arguments, CallContext& call) {
    Workspace workspace(config, call);
    const auto fork = text_arg(arguments, "fork");
    if (workspace.reach(fork) == Standing::source)
      refuse_outside(fork, "it is a source, not a fork: there is nothing to merge");
    require_confirmation(arguments, "fork_merge writes into the fork's parent");
    const auto strategy = text_arg(arguments, "strategy", "refuse");
    if (strategy != "refuse" && strategy != "fork-wins")
      throw TforkError(ErrorKind::usage, "InvalidArgument",
                       "strategy must be refuse or fork-wins, not '" + strategy + "'");
    // prefix: one string or a list of them, as --prefix once or repeated.
    std::vector<std::string> prefixes;
    if (const auto found = arguments.find("prefix"); found != arguments.end()) {
      if (found->is_string()) {
        prefixes.push_back(found->get<std::string>());
      } else {
        for (const auto& prefix : *found)
          prefixes.push_back(prefix.get<std::string>());
        if (prefixes.empty()) usage_error("prefix: give at least one, or leave it out");
      }
    }
    workflow_calls::MergeArgs args;
    args.fork = fork;
    args.no_snapshot = bool_arg(arguments, "no_snapshot");
    args.strategy = strategy;
    args.prefixes = prefixes;
    args.concurrency = workspace.concurrency();
    args.cancel = &workspace.cancelled();
    auto done = workflow_calls::merge_fork(
        workspace.client(), args, [&](const std::string& parent) { workspace.reach(parent); });
    if (done.error) throw ToolFailure(std::move(*done.error), std::move(done.document));
    return std::move(done.document);
  };
  return tool;
}

Json merged_teardown(std::vector<workflow::TeardownResult>& results, std::optional<Error>& error) {
  workflow::TeardownResult all;
  for (auto& result : results) {
    std::ranges::move(result.forks, std::back_inserter(all.forks));
    std::ranges::move(result.keys, std::back_inserter(all.keys));
    std::ranges::move(result.snapshots, std::back_inserter(all.snapshots));
    if (result.error && !error) error = std::move(result.error);
  }
  return workflow_calls::teardown_json(all);
}

Tool fork_teardown_tool(const ServerConfig& config) {
  Tool tool;
  tool.name = "fork_teardown";
  tool.title = "Delete forks and their keys";
  tool.description =
      "Delete forks (with every object in them) and revoke their access keys: `forks` names "
      "them, or `all: true` removes every fork of every source of this server. Only forks are "
      "ever deleted, never a source; a fork that has forks of its own is left alone unless "
      "`all`. DESTRUCTIVE and cannot be undone: ask the user first and pass confirm: true only "
      "after they said yes.";
  tool.input_schema = schema::object(
      {{"forks", Json{{"type", "array"},
                      {"items", schema::bucket("A fork")},
                      {"minItems", 1},
                      {"maxItems", workflow::k_max_forks},
                      {"description", "The forks to delete"}}},
       {"all", schema::boolean("Every fork of every source (instead of `forks`)")},
       {"confirm", schema::boolean("true only after the user agreed to delete them")}});
  tool.output_schema = schema::document(
      {{"forks", Json{{"type", "array"}, {"items", Json{{"type", "object"}}}}},
       {"keys", Json{{"type", "array"}, {"items", Json{{"type", "object"}}}}},
       {"snapshots", Json{{"type", "array"}, {"items", Json{{"type", "object"}}}}}},
      {"forks", "keys"});
  tool.hints = {.read_only = false, .destructive = true, .idempotent = true};
  tool.run = [&config](const Json& arguments, CallContext& call) {
    Workspace workspace(config, call);
    const bool all = bool_arg(arguments, "all");
    if (all == arguments.contains("forks"))
      usage_error("say what to delete: `forks` (names) or `all: true`, one of them");
    std::vector<std::string> forks;
    std::map<std::string, std::string> source_of;
    if (!all) {
      for (const auto& fork : arguments["forks"]) {
        const auto name = fork.get<std::string>();
        if (workspace.is_source(name))
          refuse_outside(name, "it is a source: fork_teardown deletes forks only");
        try {
          workspace.reach(name);
        } catch (const TforkError& error) {
          if (error.error().kind != ErrorKind::not_found) throw;  // already gone: reported so
        }
        // The workflow checks it is a fork of that bucket again right before deleting it.
        if (auto parent = workspace.parent_of(name)) source_of[name] = *parent;
        forks.push_back(name);
      }
    }
    require_confirmation(arguments, "fork_teardown deletes forks and every object in them");
    std::vector<workflow::TeardownResult> results;
    if (all) {
      for (const auto& source : workspace.sources())
        results.push_back(workflow_calls::teardown_all(
            workspace.client(), source, workspace.concurrency(), workspace.cancelled()));
    } else {
      results.push_back(workflow_calls::teardown_forks(
          workspace.client(), forks, source_of, workspace.concurrency(), workspace.cancelled()));
    }
    std::optional<Error> error;
    auto document = merged_teardown(results, error);
    if (error) throw ToolFailure(std::move(*error), std::move(document));
    return document;
  };
  return tool;
}

Tool bucket_tree_tool(const ServerConfig& config) {
  Tool tool;
  tool.name = "bucket_tree";
  tool.title = "Fork tree";
  tool.description =
      "The fork tree of a source: its snapshots, the forks made from each, and their forks in "
      "turn, as nested JSON.";
  tool.input_schema =
      schema::object({{"bucket", schema::bucket("A source or a fork of one")}}, {"bucket"});
  tool.output_schema = schema::document({{"bucket", schema::text("The root")},
                                         {"snapshots", Json{{"type", "array"}}},
                                         {"forks", Json{{"type", "array"}}}},
                                        {"bucket"});
  tool.hints = {.read_only = true, .destructive = false, .idempotent = true};
  tool.run = [&config](const Json& arguments, CallContext& call) {
    Workspace workspace(config, call);
    const auto bucket = text_arg(arguments, "bucket");
    workspace.reach(bucket);
    return workflow_calls::bucket_tree(workspace.client(), bucket, workspace.concurrency());
  };
  return tool;
}

}  // namespace

void add_fork_tools(std::vector<Tool>& tools, const ServerConfig& config) {
  if (std::holds_alternative<AgentMode>(config.mode)) {
    tools.push_back(fork_diff_tool(config));
    tools.push_back(snapshot_take_tool(config));
    tools.push_back(snapshot_list_tool(config));
    return;
  }
  tools.push_back(snapshot_take_tool(config));
  tools.push_back(snapshot_list_tool(config));
  tools.push_back(fork_create_tool(config));
  tools.push_back(fork_list_tool(config));
  tools.push_back(fork_head_tool(config));
  tools.push_back(fork_diff_tool(config));
  tools.push_back(fork_merge_tool(config));
  tools.push_back(fork_teardown_tool(config));
  tools.push_back(bucket_tree_tool(config));
}

}  // namespace tfork::mcp
