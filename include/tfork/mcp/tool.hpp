// SPDX-License-Identifier: Apache-2.0
#pragma once
// One MCP tool (MCP 2025-11-25 server/tools): its name, the description a model reads, the
// JSON Schemas of its arguments and of its result, its behaviour hints, and what runs it.
// A tool returns its result document (the structuredContent, also sent as text) or throws
// TforkError, which the session turns into a result with isError: true carrying the message
// and exit code a CLI user would see.

#include "tfork/core/error.hpp"
#include "tfork/mcp/json_rpc.hpp"

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::mcp {

// RFC 5424 severities, as logging/setLevel names them (server/utilities/logging).
enum class LogLevel { debug, info, notice, warning, error, critical, alert, emergency };
std::string_view level_name(LogLevel level);
std::optional<LogLevel> parse_level(std::string_view name);

// What a running call may do besides returning.
class CallContext {
 public:
  virtual ~CallContext() = default;
  // Set when the client cancelled the call (notifications/cancelled), when the session ended,
  // or on SIGINT/SIGTERM: the call ends as a CLI command does on Ctrl-C.
  virtual const std::atomic<bool>& cancelled() const = 0;
  // `done` of `total` (0: unknown), sent as notifications/progress when the request carried a
  // progressToken; at most every 100 ms, and always for the last step.
  virtual void progress(double done, double total, std::string message) = 0;
  // A notifications/message to the client, when the session's level lets it through.
  virtual void log(LogLevel level, std::string message) = 0;
};

// A failed tool that still has a document to show (a batch's per-item outcomes): the result
// carries the error line, then the document as text.
class ToolFailure : public TforkError {
 public:
  ToolFailure(Error error, Json document)
      : TforkError(std::move(error)), document_(std::move(document)) {}
  const Json& document() const { return document_; }

 private:
  Json document_;
};

// The hints of MCP's ToolAnnotations. openWorld is false for every tfork tool: each acts on
// named buckets of one service, never on an open set of outside entities.
struct ToolHints {
  bool read_only = false;
  bool destructive = false;
  bool idempotent = false;
  bool open_world = false;
};

struct Tool {
  std::string name;
  std::string title;
  std::string description;  // written for a model: when to use it, what it must not do
  Json input_schema;
  Json output_schema;
  ToolHints hints;
  std::function<Json(const Json& arguments, CallContext& call)> run;

  // --read-only leaves out every tool that is not read-only (cli.md §13).
  bool mutating() const { return !hints.read_only; }
};

}  // namespace tfork::mcp
