// SPDX-License-Identifier: Apache-2.0
#pragma once
// One MCP session, independent of its transport (stdio, or one Mcp-Session-Id over HTTP):
// the lifecycle (initialize with version negotiation, then operation), ping, tools/list
// with a cursor, tools/call on the worker pool, notifications/cancelled, logging/setLevel
// with notifications/message, and notifications/progress for calls that carry a
// progressToken (MCP 2025-11-25 basic/lifecycle, basic/utilities/*, server/tools,
// server/utilities/*; 2025-06-18 and 2025-03-26 too, see protocol_versions()).
//
// Threads: receive() may be called from any one thread at a time (the transport's reader);
// answers and notifications go to the Channel given with each message, from that thread or
// from a worker; a Channel must take messages from several threads at once.

#include "tfork/mcp/json_rpc.hpp"
#include "tfork/mcp/tool.hpp"
#include "tfork/mcp/worker_pool.hpp"

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::mcp {

// Newest first: the first is what a client asking for an unknown version is offered.
std::span<const std::string_view> protocol_versions();
bool supported_version(std::string_view version);

// Where the messages of one exchange go: stdout, or one HTTP response.
class Channel {
 public:
  virtual ~Channel() = default;
  virtual void send(const Json& message) = 0;
  // The request will get no response (the client cancelled it, MCP basic/utilities/
  // cancellation); a channel waiting for one may end now.
  virtual void response_dropped() {}
};

struct SessionSettings {
  std::string server_version;
  std::string instructions;  // initialize's "instructions": how the tools fit together
  std::size_t tools_page_size = 50;
};

class Session {
 public:
  Session(std::vector<Tool> tools, WorkerPool& workers, SessionSettings settings);
  ~Session();  // cancels what still runs and waits for it
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // One message (an object, or with protocol 2025-03-26 a batch) from the client.
  void receive(std::string_view text, const std::shared_ptr<Channel>& channel);
  // A message that could not be read whole (too large): answered as a parse error.
  void refuse(std::string message, const std::shared_ptr<Channel>& channel);

  // Every call in flight is cancelled (EOF, SIGINT/SIGTERM, an HTTP session deleted).
  void cancel_all();
  // Until no call of this session runs; cancels them all once `interrupt` (when given) is set.
  void wait_idle(const std::atomic<bool>* interrupt = nullptr);

  bool initialized() const;
  std::string protocol_version() const;  // "" before initialize

 private:
  struct Call;
  class CallScope;
  void handle(const Json& value, const std::shared_ptr<Channel>& channel);
  void handle_request(const Request& request, const std::shared_ptr<Channel>& channel);
  void handle_notification(const Notification& notification);
  Json initialize(const Request& request);
  Json list_tools(const Request& request);
  void call_tool(const Request& request, const std::shared_ptr<Channel>& channel);
  void run_call(const std::shared_ptr<Call>& call);
  Json tool_json(const Tool& tool) const;
  Json call_result(const Json& document) const;

  std::vector<Tool> tools_;
  WorkerPool& workers_;
  SessionSettings settings_;
  mutable std::mutex mutex_;
  std::condition_variable idle_;
  std::string version_;  // negotiated; "" before initialize
  std::atomic<LogLevel> level_{LogLevel::warning};
  std::map<std::string, std::shared_ptr<Call>> calls_;  // in flight, by id's JSON text
};

}  // namespace tfork::mcp
