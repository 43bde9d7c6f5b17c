// SPDX-License-Identifier: Apache-2.0
// One MCP session with tools that do nothing but what the test says: the lifecycle, paging,
// tool results and errors, cancellation, progress, batches and the bounded queue
// (MCP 2025-11-25 basic/lifecycle, basic/utilities/*, server/tools, server/utilities/*).
#include "tfork/mcp/session.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

using namespace tfork;
using namespace tfork::mcp;

namespace {

// Every message the session sent, in order; waits for one.
class Recorder final : public Channel {
 public:
  void send(const Json& message) override {
    std::lock_guard lock(mutex_);
    messages_.push_back(message);
    changed_.notify_all();
  }
  void response_dropped() override {
    std::lock_guard lock(mutex_);
    ++dropped_;
    changed_.notify_all();
  }
  Json wait_for_id(const Json& id) {
    std::unique_lock lock(mutex_);
    const auto found = [&]() -> const Json* {
      for (const auto& m : messages_)
        if (m.contains("id") && m["id"] == id) return &m;
      return nullptr;
    };
    REQUIRE(changed_.wait_for(lock, std::chrono::seconds(30), [&] { return found() != nullptr; }));
    return *found();
  }
  std::vector<Json> messages() {
    std::lock_guard lock(mutex_);
    return messages_;
  }
  int dropped() {
    std::lock_guard lock(mutex_);
    return dropped_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Json> messages_;
  int dropped_ = 0;
};

// A gate a tool waits at until the test opens it (or the call is cancelled).
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  bool entered = false;
  void wait_entered() {
    std::unique_lock lock(mutex);
    REQUIRE(changed.wait_for(lock, std::chrono::seconds(30), [&] { return entered; }));
  }
};

Tool tool(std::string name, std::function<Json(const Json&, CallContext&)> run,
          bool read_only = true) {
  Tool t;
  t.name = std::move(name);
  t.title = t.name;
  t.description = "a test tool";
  t.input_schema = Json{{"type", "object"},
                        {"properties", {{"n", {{"type", "integer"}}}}},
                        {"additionalProperties", false}};
  t.output_schema = Json{{"type", "object"}};
  t.hints.read_only = read_only;
  t.run = std::move(run);
  return t;
}

std::string request(const Json& id, const std::string& method, Json params = Json::object()) {
  return Json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}}
      .dump();
}

void initialize(Session& session, const std::shared_ptr<Recorder>& out,
                const std::string& version = "2025-11-25") {
  session.receive(request("init", "initialize", {{"protocolVersion", version}}), out);
  REQUIRE(out->wait_for_id("init").contains("result"));
}

}  // namespace

TEST_CASE("initialize negotiates the version; nothing but ping before it", "[mcp][session]") {
  WorkerPool workers(2, 16, 1 << 20);
  Session session({tool("echo", [](const Json& a, CallContext&) { return a; })}, workers,
                  {"1.0", "hi", 50});
  auto out = std::make_shared<Recorder>();
  session.receive(request(1, "tools/list"), out);
  CHECK(out->wait_for_id(1)["error"]["code"] == k_invalid_request);
  session.receive(request(2, "ping"), out);
  CHECK(out->wait_for_id(2)["result"] == Json::object());
  session.receive(request(3, "initialize", {{"protocolVersion", 5}}), out);
  CHECK(out->wait_for_id(3)["error"]["code"] == k_invalid_params);

  session.receive(request(4, "initialize", {{"protocolVersion", "2024-01-01"}}), out);
  const auto result = out->wait_for_id(4)["result"];
  CHECK(result["protocolVersion"] == "2025-11-25");  // ours, the newest, for one we do not know
  CHECK(result["capabilities"].contains("tools"));
  CHECK(result["capabilities"].contains("logging"));
  CHECK(result["instructions"] == "hi");
  CHECK(session.protocol_version() == "2025-11-25");
  session.receive(request(5, "initialize", {{"protocolVersion", "2025-11-25"}}), out);
  CHECK(out->wait_for_id(5)["error"]["code"] == k_invalid_request);
  session.receive(request(6, "prompts/list"), out);
  CHECK(out->wait_for_id(6)["error"]["code"] == k_method_not_found);
}

TEST_CASE("tools/list pages with an opaque cursor", "[mcp][session]") {
  WorkerPool workers(1, 16, 1 << 20);
  std::vector<Tool> tools;
  for (const auto* name : {"a", "b", "c", "d", "e"})
    tools.push_back(tool(name, [](const Json&, CallContext&) { return Json::object(); }));
  Session session(tools, workers, {"1.0", "", 2});
  auto out = std::make_shared<Recorder>();
  initialize(session, out);
  std::vector<std::string> names;
  Json cursor;
  for (int page = 0; page < 10; ++page) {
    Json params = Json::object();
    if (!cursor.is_null()) params["cursor"] = cursor;
    session.receive(request(100 + page, "tools/list", params), out);
    const auto result = out->wait_for_id(100 + page)["result"];
    for (const auto& t : result["tools"]) {
      names.push_back(t["name"]);
      CHECK(t.contains("outputSchema"));
      CHECK(t["annotations"]["readOnlyHint"] == true);
      CHECK(t["annotations"]["openWorldHint"] == false);
    }
    if (!result.contains("nextCursor")) break;
    cursor = result["nextCursor"];
  }
  CHECK(names == std::vector<std::string>{"a", "b", "c", "d", "e"});
  session.receive(request(200, "tools/list", {{"cursor", "tools-from-99"}}), out);
  CHECK(out->wait_for_id(200)["error"]["code"] == k_invalid_params);
}

TEST_CASE("tools/call: the document as structuredContent and as text; errors", "[mcp][session]") {
  WorkerPool workers(2, 16, 1 << 20);
  Session session({tool("echo",
                        [](const Json& a, CallContext&) {
                          return Json{{"got", a}};
                        }),
                   tool("fails",
                        [](const Json&, CallContext&) -> Json {
                          throw TforkError(Error{ErrorKind::not_found, "NoSuchBucket",
                                                 "bucket x does not exist", 404, "R1"});
                        }),
                   tool("partly",
                        [](const Json&, CallContext&) -> Json {
                          throw ToolFailure(
                              Error{ErrorKind::partial, "PartialFailure", "1 of 2 failed", 0, {}},
                              Json{{"items", 2}});
                        })},
                  workers, {"1.0", "", 50});
  auto out = std::make_shared<Recorder>();
  initialize(session, out);
  session.receive(request(1, "tools/call", {{"name", "echo"}, {"arguments", {{"n", 3}}}}), out);
  const auto ok = out->wait_for_id(1)["result"];
  CHECK(ok["isError"] == false);
  CHECK(ok["structuredContent"] == Json{{"got", {{"n", 3}}}});
  CHECK(Json::parse(ok["content"][0]["text"].get<std::string>()) == ok["structuredContent"]);

  session.receive(request(2, "tools/call", {{"name", "fails"}}), out);
  const auto failed = out->wait_for_id(2)["result"];
  CHECK(failed["isError"] == true);
  CHECK_FALSE(failed.contains("structuredContent"));
  CHECK(failed["content"][0]["text"] ==
        "error: bucket x does not exist (NoSuchBucket, HTTP 404, request id R1); exit 3");

  session.receive(request(3, "tools/call", {{"name", "partly"}}), out);
  const auto partial = out->wait_for_id(3)["result"];
  CHECK(partial["content"][0]["text"].get<std::string>().ends_with("exit 7"));
  CHECK(Json::parse(partial["content"][1]["text"].get<std::string>()) == Json{{"items", 2}});

  session.receive(request(4, "tools/call", {{"name", "echo"}, {"arguments", {{"n", "3"}}}}), out);
  CHECK(out->wait_for_id(4)["error"]["code"] == k_invalid_params);
  session.receive(request(5, "tools/call", {{"name", "nope"}}), out);
  CHECK(out->wait_for_id(5)["error"]["code"] == k_invalid_params);
  session.receive(request(6, "tools/call", {{"arguments", Json::object()}}), out);
  CHECK(out->wait_for_id(6)["error"]["code"] == k_invalid_params);
}

TEST_CASE("2025-03-26: no structured output; batches answered as one array", "[mcp][session]") {
  WorkerPool workers(2, 16, 1 << 20);
  Session session({tool("echo", [](const Json& a, CallContext&) { return a; })}, workers,
                  {"1.0", "", 50});
  auto out = std::make_shared<Recorder>();
  initialize(session, out, "2025-03-26");
  session.receive(request(1, "tools/list"), out);
  CHECK_FALSE(out->wait_for_id(1)["result"]["tools"][0].contains("outputSchema"));
  session.receive(R"([{"jsonrpc":"2.0","id":"p","method":"ping"},
                      {"jsonrpc":"2.0","method":"notifications/initialized"},
                      {"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"echo","arguments":{"n":1}}},
                      {"jsonrpc":"2.0","id":"x","method":"nope"}])",
                  out);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  Json batch;
  while (batch.is_null() && std::chrono::steady_clock::now() < deadline) {
    for (const auto& m : out->messages())
      if (m.is_array()) batch = m;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(batch.is_array());
  CHECK(batch.size() == 3);
  for (const auto& answer : batch) {
    if (answer["id"] == "c") CHECK_FALSE(answer["result"].contains("structuredContent"));
    if (answer["id"] == "x") CHECK(answer["error"]["code"] == k_method_not_found);
  }
}

TEST_CASE("notifications/cancelled: the call sees it and sends no response", "[mcp][session]") {
  WorkerPool workers(2, 16, 1 << 20);
  Gate gate;
  Session session({tool("wait",
                        [&](const Json&, CallContext& call) {
                          {
                            std::lock_guard lock(gate.mutex);
                            gate.entered = true;
                          }
                          gate.changed.notify_all();
                          while (!call.cancelled().load())
                            std::this_thread::sleep_for(std::chrono::milliseconds(1));
                          return Json::object();
                        })},
                  workers, {"1.0", "", 50});
  auto out = std::make_shared<Recorder>();
  initialize(session, out);
  session.receive(request("w", "tools/call", {{"name", "wait"}}), out);
  gate.wait_entered();
  session.receive(request("w", "tools/call", {{"name", "wait"}}), out);
  CHECK(out->wait_for_id("w")["error"]["code"] == k_invalid_request);  // its id is in flight
  const auto before = out->messages().size();
  session.receive(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w","reason":"t"}})",
      out);
  session.wait_idle();
  CHECK(out->dropped() == 1);
  CHECK(out->messages().size() == before);
}

TEST_CASE("progress: only with a token, increasing, and the last step always", "[mcp][session]") {
  WorkerPool workers(1, 16, 1 << 20);
  Session session({tool("steps",
                        [](const Json&, CallContext& call) {
                          for (int i = 1; i <= 100; ++i)
                            call.progress(i, 100, "step");
                          call.progress(50, 100, "backwards");
                          return Json::object();
                        })},
                  workers, {"1.0", "", 50});
  auto out = std::make_shared<Recorder>();
  initialize(session, out);
  session.receive(request(1, "tools/call", {{"name", "steps"}}), out);
  out->wait_for_id(1);
  session.receive(
      request(2, "tools/call", {{"name", "steps"}, {"_meta", {{"progressToken", "tok"}}}}), out);
  out->wait_for_id(2);
  std::vector<double> seen;
  for (const auto& m : out->messages()) {
    if (m.value("method", "") != "notifications/progress") continue;
    CHECK(m["params"]["progressToken"] == "tok");
    seen.push_back(m["params"]["progress"]);
  }
  REQUIRE_FALSE(seen.empty());
  CHECK(seen.front() == 1);
  CHECK(seen.back() == 100);
  for (std::size_t i = 1; i < seen.size(); ++i)
    CHECK(seen[i] > seen[i - 1]);
}

TEST_CASE("logging/setLevel filters notifications/message", "[mcp][session]") {
  WorkerPool workers(1, 16, 1 << 20);
  Session session({tool("talk",
                        [](const Json&, CallContext& call) {
                          call.log(LogLevel::debug, "quiet");
                          call.log(LogLevel::error, "loud");
                          return Json::object();
                        })},
                  workers, {"1.0", "", 50});
  auto out = std::make_shared<Recorder>();
  initialize(session, out);
  const auto logged = [&] {
    std::vector<std::string> data;
    for (const auto& m : out->messages())
      if (m.value("method", "") == "notifications/message") data.push_back(m["params"]["data"]);
    return data;
  };
  session.receive(request(1, "tools/call", {{"name", "talk"}}), out);
  out->wait_for_id(1);
  CHECK(logged() == std::vector<std::string>{"loud"});  // warning and above by default
  session.receive(request(2, "logging/setLevel", {{"level", "debug"}}), out);
  out->wait_for_id(2);
  session.receive(request(3, "tools/call", {{"name", "talk"}}), out);
  out->wait_for_id(3);
  CHECK(logged() == std::vector<std::string>{"loud", "quiet", "loud"});
}

TEST_CASE("a full queue answers busy instead of growing", "[mcp][session]") {
  WorkerPool workers(1, 1, 1 << 20);
  Gate gate;
  Session session({tool("block",
                        [&](const Json&, CallContext&) {
                          std::unique_lock lock(gate.mutex);
                          gate.entered = true;
                          gate.changed.notify_all();
                          gate.changed.wait(lock, [&] { return gate.open; });
                          return Json::object();
                        })},
                  workers, {"1.0", "", 50});
  auto out = std::make_shared<Recorder>();
  initialize(session, out);
  session.receive(request(1, "tools/call", {{"name", "block"}}), out);
  gate.wait_entered();
  session.receive(request(2, "tools/call", {{"name", "block"}}), out);  // waits in the queue
  session.receive(request(3, "tools/call", {{"name", "block"}}), out);  // no room
  CHECK(out->wait_for_id(3)["error"]["code"] == k_server_busy);
  {
    std::lock_guard lock(gate.mutex);
    gate.open = true;
  }
  gate.changed.notify_all();
  CHECK(out->wait_for_id(1)["result"]["isError"] == false);
  CHECK(out->wait_for_id(2)["result"]["isError"] == false);
}
