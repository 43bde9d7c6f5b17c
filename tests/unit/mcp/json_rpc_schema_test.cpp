// SPDX-License-Identifier: Apache-2.0
// tfork mcp's JSON-RPC layer (MCP 2025-11-25 basic/index "Messages") and its checks of tool
// arguments against the tools' inputSchema (server/tools: "Servers MUST validate all tool
// inputs").
#include "tfork/mcp/json_rpc.hpp"
#include "tfork/mcp/schema.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <variant>

using namespace tfork::mcp;

namespace {

Message classify_text(const std::string& text) {
  return classify(Json::parse(text));
}

}  // namespace

TEST_CASE("classify: requests, notifications, responses", "[mcp][json_rpc]") {
  auto request = classify_text(R"({"jsonrpc":"2.0","id":7,"method":"ping"})");
  REQUIRE(std::holds_alternative<Request>(request));
  CHECK(std::get<Request>(request).id == 7);
  CHECK(std::get<Request>(request).params == Json::object());

  auto string_id =
      classify_text(R"({"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"cursor":"x"}})");
  REQUIRE(std::holds_alternative<Request>(string_id));
  CHECK(std::get<Request>(string_id).params["cursor"] == "x");

  auto notification = classify_text(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  REQUIRE(std::holds_alternative<Notification>(notification));

  CHECK(std::holds_alternative<Ignored>(classify_text(R"({"jsonrpc":"2.0","id":1,"result":{}})")));
  CHECK(std::holds_alternative<Ignored>(
      classify_text(R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}})")));
}

TEST_CASE("classify: what is not a valid request, and the id it is answered with",
          "[mcp][json_rpc]") {
  struct Case {
    const char* text;
    int code;
    Json id;
  };
  for (const auto& [text, code, id] : {
           Case{R"([])", k_invalid_request, nullptr},
           Case{R"("ping")", k_invalid_request, nullptr},
           Case{R"({"id":1,"method":"ping"})", k_invalid_request, 1},
           Case{R"({"jsonrpc":"1.0","id":1,"method":"ping"})", k_invalid_request, 1},
           Case{R"({"jsonrpc":"2.0","id":null,"method":"ping"})", k_invalid_request, nullptr},
           Case{R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", k_invalid_request, nullptr},
           Case{R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})", k_invalid_request, nullptr},
           Case{R"({"jsonrpc":"2.0","id":2,"method":7})", k_invalid_request, 2},
           Case{R"({"jsonrpc":"2.0","id":3})", k_invalid_request, 3},
           Case{R"({"jsonrpc":"2.0","id":4,"method":"ping","params":[1]})", k_invalid_params, 4},
       }) {
    INFO(text);
    const auto message = classify_text(text);
    REQUIRE(std::holds_alternative<Invalid>(message));
    CHECK(std::get<Invalid>(message).code == code);
    CHECK(std::get<Invalid>(message).id == id);
  }
}

TEST_CASE("parse: not JSON, and nesting deeper than the limit, are parse errors",
          "[mcp][json_rpc]") {
  auto broken = parse(R"({"jsonrpc": "2.0", "id": )");
  REQUIRE(std::holds_alternative<Invalid>(broken));
  CHECK(std::get<Invalid>(broken).code == k_parse_error);

  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto refused = parse(deep);
  REQUIRE(std::holds_alternative<Invalid>(refused));
  CHECK(std::get<Invalid>(refused).code == k_parse_error);
  CHECK(std::get<Invalid>(refused).message.find("nested deeper than 64") != std::string::npos);

  const std::string at_limit = std::string(k_max_depth, '[') + std::string(k_max_depth, ']');
  CHECK(std::holds_alternative<Json>(parse(at_limit)));
  // Brackets inside strings are text, not nesting.
  CHECK(std::holds_alternative<Json>(parse("[\"" + std::string(1000, '[') + "\\\"\"]")));
}

TEST_CASE("wire_text: one line, and no byte that moves a terminal", "[mcp][json_rpc]") {
  const Json message{{"text", std::string("a\nb\x1b[2J\x7f\xc2\x85\xe2\x80\xa8 ok \xff")}};
  const auto text = wire_text(message);
  CHECK(text.find('\n') == std::string::npos);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find('\x7f') == std::string::npos);
  CHECK(text.find("\\u001b[2J") != std::string::npos);
  CHECK(text.find("\\u007f") != std::string::npos);
  CHECK(text.find("\\u0085") != std::string::npos);
  CHECK(text.find("\\u2028") != std::string::npos);
  // Invalid UTF-8 is replaced, so the line stays valid JSON, and it reads back.
  const auto back = Json::parse(text);
  CHECK(back["text"].get<std::string>().starts_with("a\nb\x1b[2J\x7f"));
}

TEST_CASE("result and error messages", "[mcp][json_rpc]") {
  CHECK(result_message(1, Json::object()) ==
        Json::parse(R"({"jsonrpc":"2.0","id":1,"result":{}})"));
  CHECK(error_message("x", k_method_not_found, "nope") ==
        Json::parse(R"({"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"nope"}})"));
  CHECK(notification_message("notifications/progress",
                             Json{{"progress", 1}})["params"]["progress"] == 1);
}

TEST_CASE("schema: types, required, unknown arguments", "[mcp][schema]") {
  const auto schema = Json::parse(R"({
    "type": "object",
    "properties": {
      "fork": {"type": "string", "minLength": 3, "maxLength": 63},
      "confirm": {"type": "boolean"},
      "count": {"type": "integer", "minimum": 1, "maximum": 1000},
      "keys": {"type": "string", "enum": ["editor", "readonly", "none"]},
      "buckets": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2}
    },
    "required": ["fork"],
    "additionalProperties": false
  })");
  CHECK_FALSE(schema_violation(schema, Json::parse(R"({"fork": "run-1", "confirm": true})")));
  CHECK_FALSE(schema_violation(schema, Json::parse(R"({"fork": "run-1", "count": 3.0})")));

  const auto says = [&](const char* arguments) {
    const auto problem = schema_violation(schema, Json::parse(arguments));
    REQUIRE(problem);
    return *problem;
  };
  CHECK(says(R"({"fork": "run-1", "confirm": "true"})") ==
        "confirm must be a boolean, got the string \"true\"");
  CHECK(says(R"({})") == "arguments needs 'fork'");
  CHECK(says(R"({"fork": "ab"})") == "fork must be at least 3 characters long");
  CHECK(says(R"({"fork": "run-1", "count": 0})") == "count must be at least 1, got 0");
  CHECK(says(R"({"fork": "run-1", "count": 2.5})") ==
        "count must be an integer, got the number 2.5");
  CHECK(says(R"({"fork": "run-1", "keys": "admin"})").starts_with("keys must be one of"));
  CHECK(says(R"({"fork": "run-1", "buckets": []})") == "buckets needs at least 1 item(s)");
  CHECK(says(R"({"fork": "run-1", "buckets": ["a", 2]})") ==
        "buckets[1] must be a string, got the number 2");
  CHECK(says(R"({"fork": "run-1", "force": true})") ==
        "this tool has no argument 'force' (it takes: fork, confirm, count, keys, buckets)");
}

TEST_CASE("schema: nullable values and unsupported keywords", "[mcp][schema]") {
  const auto nullable = Json::parse(R"({"anyOf": [{"type": "string"}, {"type": "null"}]})");
  CHECK_FALSE(schema_violation(nullable, nullptr));
  CHECK_FALSE(schema_violation(nullable, "x"));
  CHECK(schema_violation(nullable, 3));
  const auto listed = Json::parse(R"({"type": ["integer", "null"]})");
  CHECK_FALSE(schema_violation(listed, nullptr));
  CHECK(*schema_violation(listed, "3") ==
        "arguments must be an integer or null, got the string \"3\"");
  // A keyword this checker does not know is a mistake in the schema, not a pass.
  CHECK(schema_violation(Json::parse(R"({"pattern": "^a"})"), "a"));
}
