// SPDX-License-Identifier: Apache-2.0
// The object tools of `tfork mcp` (cli.md §13): list, get, put, delete and presign objects of
// the buckets within the server's reach. Writes never go to a source.
#include "tfork/crypto/hash.hpp"
#include "tfork/mcp/toolbox.hpp"
#include "tfork/mcp/workspace.hpp"
#include "tfork/output/render.hpp"
#include "tfork/tigris/object_ops.hpp"
#include "tfork/tigris/objects.hpp"

#include <fmt/format.h>

#include <chrono>

namespace tfork::mcp {
namespace {

constexpr std::int64_t k_default_page = 100;
constexpr std::int64_t k_max_page = 1000;
constexpr std::int64_t k_default_expiry = 3600;
constexpr std::int64_t k_max_expiry = 7 * 24 * 3600;  // SigV4's longest presigned URL

std::string key_argument(const Json& arguments) {
  auto key = arguments["key"].get<std::string>();
  if (auto problem = tigris::object_key_problem(key))
    usage_error("invalid key '" + output::printable(key) + "': " + *problem);
  return key;
}

Json bucket_property(bool agent, std::string_view what) {
  return schema::bucket(agent ? "Your fork (the default)" : std::string(what));
}

std::vector<std::string> bucket_required(bool agent, std::vector<std::string> others) {
  if (!agent) others.insert(others.begin(), "bucket");
  return others;
}

std::string iso_time(std::chrono::system_clock::time_point when) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch());
  return output::normalise_rfc3339(output::rfc3339_from_ns(ns.count() / 1000000000 * 1000000000));
}

// Text a model can read inline: UTF-8 without NUL or control characters other than tab and
// line breaks.
bool readable_text(std::string_view bytes) {
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 && c != '\n' && c != '\r' && c != '\t') return false;
    if (byte == 0x7f) return false;
  }
  // output::printable keeps valid UTF-8 (other than C1 controls) as it is.
  std::string flattened(bytes);
  std::erase_if(flattened, [](char c) { return c == '\n' || c == '\r' || c == '\t'; });
  return output::printable(flattened) == flattened;
}

Tool object_list_tool(const ServerConfig& config, bool agent) {
  Tool tool;
  tool.name = "object_list";
  tool.title = "List objects";
  tool.description =
      std::string("List objects of ") + (agent ? "your fork" : "a source or a fork") +
      " by key, with size, ETag and time. `prefix` narrows it; `delimiter` ('/') groups keys "
      "into common_prefixes like folders. Paged: pass next_cursor back as cursor for more.";
  tool.input_schema = schema::object(
      {{"bucket", bucket_property(agent, "A source or a fork of one")},
       {"prefix", schema::text("Only keys starting with this")},
       {"delimiter", schema::text("Group keys by what follows the prefix up to this ('/')")},
       {"cursor", schema::text("next_cursor of the previous page")},
       {"limit", schema::integer("Keys per page (default 100)", 1, k_max_page)}},
      bucket_required(agent, {}));
  tool.output_schema = schema::document(
      {{"bucket", schema::text("The bucket")},
       {"prefix", schema::text("The prefix")},
       {"delimiter", schema::text("The delimiter")},
       {"objects",
        Json{{"type", "array"},
             {"items", Json{{"type", "object"},
                            {"properties",
                             {{"key", schema::text("The key")},
                              {"size", Json{{"type", "integer"}}},
                              {"etag", schema::text("ETag")},
                              {"last_modified", schema::nullable_text("RFC 3339 UTC")}}}}}}},
       {"common_prefixes", Json{{"type", "array"}, {"items", Json{{"type", "string"}}}}},
       {"next_cursor", schema::next_cursor()}},
      {"bucket", "objects", "common_prefixes", "next_cursor"});
  tool.hints = {.read_only = true, .destructive = false, .idempotent = true};
  tool.run = [&config](const Json& arguments, CallContext& call) {
    Workspace workspace(config, call);
    const auto bucket = workspace.bucket_argument(arguments, "bucket");
    workspace.reach(bucket);
    tigris::ListObjectsRequest request;
    request.bucket = bucket;
    request.prefix = arguments.value("prefix", "");
    request.delimiter = arguments.value("delimiter", "");
    request.max_keys = static_cast<int>(arguments.value("limit", k_default_page));
    const Json listing{
        {"bucket", bucket}, {"prefix", request.prefix}, {"delimiter", request.delimiter}};
    if (arguments.contains("cursor")) {
      auto position = read_cursor(arguments["cursor"].get<std::string>());
      const auto token = position.value("token", "");
      position.erase("token");
      if (position != listing || token.empty()) read_cursor("");
      request.continuation_token = token;
    }
    const auto operation = tigris::list_objects_v2(request);
    const auto page = tigris::parse_object_list(
        tigris::expect_success(workspace.client().send(operation), operation.name));
    if (!page)
      throw TforkError(ErrorKind::other, "InvalidListing", "ListObjectsV2: " + page.error());
    Json objects = Json::array();
    for (const auto& entry : page->objects)
      objects.push_back(Json{{"key", entry.key},
                             {"size", entry.size},
                             {"etag", entry.etag},
                             {"last_modified", output::json_time(entry.last_modified)}});
    Json next = nullptr;
    if (!page->next_token.empty()) {
      auto position = listing;
      position["token"] = page->next_token;
      next = make_cursor(position);
    }
    auto document = listing;
    document["objects"] = std::move(objects);
    document["common_prefixes"] = page->common_prefixes;
    document["next_cursor"] = std::move(next);
    return document;
  };
  return tool;
}

Json get_output_schema() {
  return schema::document(
      {{"bucket", schema::text("The bucket")},
       {"key", schema::text("The key")},
       {"size", Json{{"type", "integer"}, {"description", "The object's size in bytes"}}},
       {"content_type", schema::text("Its Content-Type")},
       {"etag", schema::text("Its ETag")},
       {"encoding", Json{{"type", "string"},
                         {"enum", {"text", "base64", "url"}},
                         {"description",
                          "text: in `text`; base64: in `base64`; url: too large to "
                          "inline, fetch `url` (presigned, until `expires_at`)"}}},
       {"text", schema::text("The body, when it is text")},
       {"base64", schema::text("The body, base64, when it is binary")},
       {"url", schema::text("A presigned GET URL, when the body is larger than the inline cap")},
       {"expires_at", schema::text("When `url` stops working (RFC 3339 UTC)")}},
      {"bucket", "key", "size", "encoding"});
}

Tool object_get_tool(const ServerConfig& config, bool agent) {
  Tool tool;
  tool.name = "object_get";
  tool.title = "Read an object";
  tool.description = fmt::format(
      "Read an object of {}. Up to {} bytes come inline: as `text` when the body is UTF-8 text, "
      "else as `base64`. A larger object is not read: you get a presigned `url` (valid 1 hour) "
      "to fetch it with another tool.",
      agent ? "your fork" : "a source or a fork", config.max_inline_bytes);
  tool.input_schema =
      schema::object({{"bucket", bucket_property(agent, "A source or a fork of one")},
                      {"key", schema::text("The object's key")}},
                     bucket_required(agent, {"key"}));
  tool.output_schema = get_output_schema();
  tool.hints = {.read_only = true, .destructive = false, .idempotent = true};
  tool.run = [&config](const Json& arguments, CallContext& call) {
    Workspace workspace(config, call);
    const auto bucket = workspace.bucket_argument(arguments, "bucket");
    workspace.reach(bucket);
    const auto key = key_argument(arguments);
    auto& client = workspace.client();
    // One byte past the cap tells "fits" from "too large" without reading more.
    auto result = client.send(tigris::get_object(bucket, key, config.max_inline_bytes + 1));
    // An empty object has no byte 0: S3 answers a range on it with 416.
    if (result && result->status == 416) result = client.send(tigris::get_object(bucket, key));
    const auto response = tigris::expect_success(std::move(result), "GetObject");
    const auto read = tigris::parse_object_read(response);
    Json document{{"bucket", bucket},
                  {"key", key},
                  {"size", read.size},
                  {"content_type", read.content_type},
                  {"etag", read.etag}};
    if (read.size > config.max_inline_bytes ||
        static_cast<std::int64_t>(response.body.size()) > config.max_inline_bytes) {
      const auto now = std::chrono::system_clock::now();
      const std::chrono::seconds expiry(k_default_expiry);
      document["encoding"] = "url";
      document["url"] = tigris::presigned_url(client, "GET", bucket, key, expiry, now);
      document["expires_at"] = iso_time(now + expiry);
    } else if (readable_text(response.body)) {
      document["encoding"] = "text";
      document["text"] = response.body;
    } else {
      document["encoding"] = "base64";
      document["base64"] = crypto::base64_encode(response.body);
    }
    return document;
  };
  return tool;
}

Tool object_put_tool(const ServerConfig& config, bool agent) {
  Tool tool;
  tool.name = "object_put";
  tool.title = "Write an object";
  tool.description =
      std::string("Write an object into ") + (agent ? "your fork" : "a fork (never a source)") +
      ", replacing any object of that key: the body as `text` (UTF-8) or as `base64`, exactly "
      "one of them.";
  tool.input_schema = schema::object(
      {{"bucket", bucket_property(agent, "A fork of a source")},
       {"key", schema::text("The object's key")},
       {"text", schema::text("The body as UTF-8 text")},
       {"base64", schema::text("The body, base64-encoded (binary data)")},
       {"content_type", schema::text("Its Content-Type (default text/plain; charset=utf-8 for "
                                     "text, application/octet-stream for base64)")}},
      bucket_required(agent, {"key"}));
  tool.output_schema = schema::document({{"bucket", schema::text("The bucket")},
                                         {"key", schema::text("The key")},
                                         {"size", Json{{"type", "integer"}}},
                                         {"etag", schema::text("The new object's ETag")}},
                                        {"bucket", "key", "size"});
  tool.hints = {.read_only = false, .destructive = true, .idempotent = true};
  tool.run = [&config](const Json& arguments, CallContext& call) {
    Workspace workspace(config, call);
    const auto bucket = workspace.bucket_argument(arguments, "bucket");
    const auto key = key_argument(arguments);
    if (arguments.contains("text") == arguments.contains("base64"))
      usage_error("give the body as `text` or as `base64`, exactly one of them");
    std::string body;
    std::string content_type = arguments.value("content_type", "");
    if (arguments.contains("text")) {
      body = arguments["text"].get<std::string>();
      if (content_type.empty()) content_type = "text/plain; charset=utf-8";
    } else {
      auto decoded = crypto::base64_decode(arguments["base64"].get<std::string>());
      if (!decoded) usage_error("`base64` is not valid base64");
      body = std::move(*decoded);
      if (content_type.empty()) content_type = "application/octet-stream";
    }
    if (content_type.find_first_of("\r\n") != std::string::npos ||
        output::printable(content_type) != content_type)
      usage_error("content_type must be printable text on one line");
    workspace.reach_writable(bucket);
    const auto size = static_cast<std::int64_t>(body.size());
    const auto response = tigris::expect_success(
        workspace.client().send(tigris::put_object(bucket, key, std::move(body), content_type)),
        "PutObject");
    return Json{{"bucket", bucket},
                {"key", key},
                {"size", size},
                {"etag", tigris::parse_object_read(response).etag}};
  };
  return tool;
}

Tool object_delete_tool(const ServerConfig& config, bool agent) {
  Tool tool;
  tool.name = "object_delete";
  tool.title = "Delete an object";
  tool.description = std::string("Delete an object of ") +
                     (agent ? "your fork" : "a fork (never a source)") +
                     ". Deleting a key that is not there succeeds too.";
  tool.input_schema = schema::object({{"bucket", bucket_property(agent, "A fork of a source")},
                                      {"key", schema::text("The object's key")}},
                                     bucket_required(agent, {"key"}));
  tool.output_schema = schema::document({{"bucket", schema::text("The bucket")},
                                         {"key", schema::text("The key")},
                                         {"deleted", Json{{"type", "boolean"}}}},
                                        {"bucket", "key", "deleted"});
  tool.hints = {.read_only = false, .destructive = true, .idempotent = true};
  tool.run = [&config](const Json& arguments, CallContext& call) {
    Workspace workspace(config, call);
    const auto bucket = workspace.bucket_argument(arguments, "bucket");
    const auto key = key_argument(arguments);
    workspace.reach_writable(bucket);
    tigris::expect_success(workspace.client().send(tigris::delete_object(bucket, key)),
                           "DeleteObject");
    return Json{{"bucket", bucket}, {"key", key}, {"deleted", true}};
  };
  return tool;
}

Tool object_presign_tool(const ServerConfig& config, bool agent) {
  Tool tool;
  tool.name = "object_presign";
  tool.title = "Presigned URL";
  const bool writes = !config.read_only;
  tool.description =
      std::string("A URL that lets anyone holding it ") + (writes ? "GET (or PUT)" : "GET") +
      " one object of " + (agent ? "your fork" : "a source or a fork") +
      " without credentials, until it expires (default 1 hour). Nothing is sent to make it. " +
      (writes ? "PUT URLs are made for forks only." : "");
  Json methods = writes ? Json::array({"GET", "PUT"}) : Json::array({"GET"});
  tool.input_schema = schema::object(
      {{"bucket", bucket_property(agent, "A source or a fork of one")},
       {"key", schema::text("The object's key")},
       {"method", Json{{"type", "string"}, {"enum", methods}, {"description", "GET (default)"}}},
       {"expires_in", schema::integer("Seconds it stays valid (default 3600)", 1, k_max_expiry)}},
      bucket_required(agent, {"key"}));
  tool.output_schema =
      schema::document({{"bucket", schema::text("The bucket")},
                        {"key", schema::text("The key")},
                        {"method", schema::text("GET or PUT")},
                        {"url", schema::text("The presigned URL")},
                        {"expires_at", schema::text("When it stops working (RFC 3339 UTC)")}},
                       {"bucket", "key", "method", "url", "expires_at"});
  tool.hints = {.read_only = true, .destructive = false, .idempotent = true};
  tool.run = [&config](const Json& arguments, CallContext& call) {
    Workspace workspace(config, call);
    const auto bucket = workspace.bucket_argument(arguments, "bucket");
    const auto key = key_argument(arguments);
    const auto method = arguments.value("method", "GET");
    if (method == "PUT") {
      workspace.reach_writable(bucket);
    } else {
      workspace.reach(bucket);
    }
    const std::chrono::seconds expiry(arguments.value("expires_in", k_default_expiry));
    const auto now = std::chrono::system_clock::now();
    return Json{
        {"bucket", bucket},
        {"key", key},
        {"method", method},
        {"url", tigris::presigned_url(workspace.client(), method, bucket, key, expiry, now)},
        {"expires_at", iso_time(now + expiry)}};
  };
  return tool;
}

}  // namespace

void add_object_tools(std::vector<Tool>& tools, const ServerConfig& config) {
  const bool agent = std::holds_alternative<AgentMode>(config.mode);
  tools.push_back(object_list_tool(config, agent));
  tools.push_back(object_get_tool(config, agent));
  tools.push_back(object_put_tool(config, agent));
  tools.push_back(object_delete_tool(config, agent));
  tools.push_back(object_presign_tool(config, agent));
}

}  // namespace tfork::mcp
