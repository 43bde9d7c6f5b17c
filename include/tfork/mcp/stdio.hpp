// SPDX-License-Identifier: Apache-2.0
#pragma once
// The stdio transport (MCP 2025-11-25 basic/transports "stdio"): newline-delimited messages
// on stdin, nothing but messages on stdout, logs on stderr. A line is held up to
// k_max_message_bytes; the rest of a longer one is read and thrown away, and the line is
// answered with a parse error, so a hostile client cannot make the server hold more.

#include "tfork/mcp/session.hpp"

#include <atomic>
#include <cstddef>

namespace tfork::mcp {

inline constexpr std::size_t k_max_message_bytes = 16u << 20;

enum class StdioEnd { eof, interrupted, output_closed };

// Reads `input` until end of file (the client's way to end the session, basic/lifecycle
// "Shutdown") or until `interrupted`, and writes every message to `output`. At the end, calls
// in flight are cancelled when interrupted or when the output is gone, and waited for in any
// case.
StdioEnd serve_stdio(Session& session, int input, int output, const std::atomic<bool>& interrupted);

}  // namespace tfork::mcp
