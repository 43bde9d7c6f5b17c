// SPDX-License-Identifier: Apache-2.0
// The Streamable HTTP front's rules (MCP 2025-11-25 basic/transports), the client
// configuration merges of `tfork mcp install`, the tool sets of each mode, object keys and
// presigned URLs.
#include "tfork/core/ascii.hpp"
#include "tfork/mcp/client_config.hpp"
#include "tfork/mcp/http_front.hpp"
#include "tfork/mcp/schema.hpp"
#include "tfork/mcp/toolbox.hpp"
#include "tfork/tigris/object_ops.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace tfork;
using namespace tfork::mcp;

namespace {

constexpr const char* k_token = "0123456789abcdef";

HttpRequest post(std::string body, HeaderList extra = {}) {
  HttpRequest request{"POST",
                      "/mcp",
                      {{"host", "127.0.0.1:8765"},
                       {"authorization", std::string("Bearer ") + k_token},
                       {"content-type", "application/json"},
                       {"accept", "application/json, text/event-stream"}},
                      std::move(body)};
  for (auto& [name, value] : extra) {
    std::erase_if(request.headers, [&](const auto& h) { return h.first == name; });
    request.headers.emplace_back(name, value);
  }
  return request;
}

const std::string k_initialize =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})";

std::optional<std::string> header(const HttpReply& reply, std::string_view name) {
  for (const auto& [n, v] : reply.headers)
    if (n == name) return v;
  return std::nullopt;
}

struct Front {
  std::atomic<bool> stop{false};
  WorkerPool workers{1, 8, 1 << 20};
  HttpFront front{HttpFrontSettings{k_token, 8765, true, {"https://app.example"}, 2},
                  [this] {
                    return std::make_unique<Session>(std::vector<Tool>{}, workers,
                                                     SessionSettings{"1", "", 50});
                  },
                  stop};
  std::string session() {
    auto reply = front.handle(post(k_initialize));
    REQUIRE(reply.status == 200);
    return *header(reply, "Mcp-Session-Id");
  }
};

}  // namespace

TEST_CASE("http front: Host, Origin, token and version are checked first", "[mcp][http]") {
  Front f;
  CHECK(f.front.handle(post(k_initialize, {{"host", "evil.example:8765"}})).status == 403);
  CHECK(f.front.handle(post(k_initialize, {{"origin", "http://evil.example"}})).status == 403);
  CHECK(f.front.handle(post(k_initialize, {{"origin", "null"}})).status == 403);
  CHECK(f.front.handle(post(k_initialize, {{"origin", "http://localhost:8765"}})).status == 200);
  CHECK(f.front.handle(post(k_initialize, {{"origin", "https://app.example"}})).status == 200);
  const auto no_token = f.front.handle(post(k_initialize, {{"authorization", "Bearer nope"}}));
  CHECK(no_token.status == 401);
  CHECK(header(no_token, "WWW-Authenticate"));
  CHECK(f.front.handle(post(k_initialize, {{"authorization", ""}})).status == 401);
  CHECK(f.front.handle(post(k_initialize, {{"mcp-protocol-version", "2020-01-01"}})).status == 400);
  CHECK(f.front.handle(post(k_initialize, {{"content-type", "text/plain"}})).status == 415);
  CHECK(f.front.handle(post(k_initialize, {{"accept", "text/html"}})).status == 406);
  auto elsewhere = post(k_initialize);
  elsewhere.path = "/other";
  CHECK(f.front.handle(elsewhere).status == 404);
  auto put = post(k_initialize);
  put.method = "PUT";
  CHECK(f.front.handle(put).status == 405);
}

TEST_CASE("http front: sessions", "[mcp][http]") {
  Front f;
  const auto id = f.session();
  CHECK(id.size() == 32);
  const std::string ping = R"({"jsonrpc":"2.0","id":2,"method":"ping"})";
  CHECK(f.front.handle(post(ping)).status == 400);
  CHECK(f.front.handle(post(ping, {{"mcp-session-id", std::string(32, 'f')}})).status == 404);
  const auto pong = f.front.handle(post(ping, {{"mcp-session-id", id}}));
  CHECK(pong.status == 200);
  CHECK(Json::parse(pong.body)["result"] == Json::object());
  const auto note = f.front.handle(
      post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", {{"mcp-session-id", id}}));
  CHECK(note.status == 202);
  CHECK(note.body.empty());
  CHECK(f.front.handle(post("{not json", {{"mcp-session-id", id}})).status == 400);
  CHECK(f.front.handle(post(k_initialize, {{"mcp-session-id", id}})).status == 400);

  auto listen = post("", {{"mcp-session-id", id}, {"accept", "text/event-stream"}});
  listen.method = "GET";
  const auto stream = f.front.handle(listen);
  CHECK(stream.status == 200);
  REQUIRE(stream.stream);
  CHECK(stream.stream->next(std::chrono::milliseconds(1)) == std::string());  // a keep-alive

  auto end = post("", {{"mcp-session-id", id}});
  end.method = "DELETE";
  CHECK(f.front.handle(end).status == 200);
  CHECK_FALSE(stream.stream->next(std::chrono::milliseconds(1)));  // ended with the session
  CHECK(f.front.handle(post(ping, {{"mcp-session-id", id}})).status == 404);

  // At most max_sessions (2): the one used longest ago makes room.
  const auto a = f.session();
  const auto b = f.session();
  const auto c = f.session();
  CHECK(f.front.handle(post(ping, {{"mcp-session-id", a}})).status == 404);
  CHECK(f.front.handle(post(ping, {{"mcp-session-id", c}})).status == 200);
  (void)b;
}

TEST_CASE("install: JSON configurations keep everything else", "[mcp][config]") {
  const ServerCommand server{"/usr/bin/tfork", {"mcp", "--source", "data"}};
  const auto merged = Json::parse(merged_config(
      ClientApp::cursor, R"({"mcpServers":{"other":{"command":"x"}},"theme":"dark"})", server));
  CHECK(merged["theme"] == "dark");
  CHECK(merged["mcpServers"]["other"]["command"] == "x");
  CHECK(merged["mcpServers"]["tfork"]["args"] == Json::array({"mcp", "--source", "data"}));
  CHECK_FALSE(merged["mcpServers"]["tfork"].contains("type"));
  const auto vscode = Json::parse(merged_config(ClientApp::vscode, "", server));
  CHECK(vscode["servers"]["tfork"]["type"] == "stdio");
  const auto claude = Json::parse(config_snippet(ClientApp::claude_code, server));
  CHECK(claude["mcpServers"]["tfork"]["type"] == "stdio");
  CHECK_THROWS_AS(merged_config(ClientApp::gemini, "[1,2]", server), TforkError);
  CHECK_THROWS_AS(merged_config(ClientApp::gemini, R"({"mcpServers": 3})", server), TforkError);
  CHECK(merged_config(ClientApp::gemini, merged_config(ClientApp::gemini, "", server), server) ==
        merged_config(ClientApp::gemini, "", server));
}

TEST_CASE("install: codex TOML, our table replaced and nothing else", "[mcp][config]") {
  const ServerCommand server{"/opt/t \"x\"/tfork", {"mcp", "--source", "data"}};
  const std::string existing =
      "model = \"o3\"\n\n[mcp_servers.tfork]\ncommand = \"old\"\n\n[mcp_servers.tfork.env]\nA = "
      "\"1\"\n\n[mcp_servers.other]\ncommand = \"y\"\n";
  const auto merged = merged_config(ClientApp::codex, existing, server);
  CHECK(merged.find("old") == std::string::npos);
  CHECK(merged.find("A = \"1\"") == std::string::npos);
  CHECK(merged.find("[mcp_servers.other]\ncommand = \"y\"") != std::string::npos);
  CHECK(merged.find("model = \"o3\"") == 0);
  CHECK(merged.find("command = \"/opt/t \\\"x\\\"/tfork\"") != std::string::npos);
  CHECK(merged_config(ClientApp::codex, merged, server) == merged);
  CHECK_THROWS_AS(
      merged_config(ClientApp::codex, "[mcp_servers]\ntfork = { command = \"x\" }\n", server),
      TforkError);
  CHECK_THROWS_AS(merged_config(ClientApp::codex, "mcp_servers.tfork.command = \"x\"\n", server),
                  TforkError);
}

TEST_CASE("the tools of each mode; --read-only keeps only read-only ones", "[mcp][tools]") {
  ServerConfig config;
  config.mode = OperatorMode{{"data"}, "/tmp"};
  const auto names = [](const std::vector<Tool>& tools) {
    std::vector<std::string> out;
    for (const auto& t : tools)
      out.push_back(t.name);
    std::ranges::sort(out);
    return out;
  };
  const auto operator_tools = make_tools(config);
  CHECK(names(operator_tools) ==
        std::vector<std::string>{"bucket_tree", "fork_create", "fork_diff", "fork_head",
                                 "fork_list", "fork_merge", "fork_teardown", "object_delete",
                                 "object_get", "object_list", "object_presign", "object_put",
                                 "snapshot_list", "snapshot_take"});
  for (const auto& t : operator_tools) {
    INFO(t.name);
    // Every schema is one the argument checker understands: an empty call is judged, never a
    // "the schema uses an unsupported keyword".
    const auto problem = schema_violation(t.input_schema, Json::object());
    if (problem) CHECK(problem->find("unsupported keyword") == std::string::npos);
    CHECK_FALSE(t.description.empty());
    CHECK(t.output_schema["type"] == "object");
    if (t.name == "fork_merge" || t.name == "fork_teardown") {
      CHECK(t.hints.destructive);
      CHECK(ascii::icontains(t.description, "ask the user first"));
    }
  }
  config.read_only = true;
  CHECK(names(make_tools(config)) ==
        std::vector<std::string>{"bucket_tree", "fork_diff", "fork_head", "fork_list", "object_get",
                                 "object_list", "object_presign", "snapshot_list"});
  config.read_only = false;
  config.mode = AgentMode{"/tmp/m.json", "1"};
  CHECK(names(make_tools(config)) ==
        std::vector<std::string>{"fork_diff", "object_delete", "object_get", "object_list",
                                 "object_presign", "object_put", "snapshot_list", "snapshot_take"});
}

TEST_CASE("cursors: only ours are read back", "[mcp][tools]") {
  const Json position{{"after", "key/with \"quotes\""}};
  CHECK(read_cursor(make_cursor(position)) == position);
  for (const char* bad : {"", "abc", "tc1.zz", "tc1.5", "tc1.31"})
    CHECK_THROWS_AS(read_cursor(bad), TforkError);
}

TEST_CASE("object keys: control characters, invalid UTF-8 and dot segments refused",
          "[mcp][objects]") {
  for (const char* good : {"a", "data/2026/x.csv", "résumé.txt", ".hidden", "a..b", "a/.../b"})
    CHECK_FALSE(tigris::object_key_problem(good));
  for (const char* bad :
       {"", "a/../b", "../x", "a/./b", "..", "x\n", "evil\x1b[2J", "\xff\xfe", "tab\there"})
    CHECK(tigris::object_key_problem(bad));
  CHECK(tigris::object_key_problem(std::string(1025, 'k')));
}
