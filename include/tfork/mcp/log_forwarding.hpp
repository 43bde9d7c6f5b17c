// SPDX-License-Identifier: Apache-2.0
#pragma once
// tfork's own log lines (spdlog: a retry, a rollback, a warning of a workflow) during a tool
// call also reach the client that made the call, as notifications/message (MCP 2025-11-25
// server/utilities/logging), while stderr keeps what -v asked for. The call a line belongs to
// is the one running on the thread that logs it.

#include "tfork/mcp/tool.hpp"

namespace tfork::mcp {

// Adds the forwarding sink to the default logger (once); the stderr sinks keep the level the
// command line chose.
void install_log_forwarding();

// While it lives, log lines of this thread go to `call`.
class ForwardLogsTo {
 public:
  explicit ForwardLogsTo(CallContext& call);
  ~ForwardLogsTo();
  ForwardLogsTo(const ForwardLogsTo&) = delete;
  ForwardLogsTo& operator=(const ForwardLogsTo&) = delete;

 private:
  CallContext* previous_;
};

}  // namespace tfork::mcp
