// SPDX-License-Identifier: Apache-2.0
#pragma once
// tfork mcp (cli.md §13): an MCP server in the binary, in operator mode (--source S...) or
// agent mode (--manifest M --fork F), over stdio or Streamable HTTP (--listen); `mcp config`
// and `mcp install` put it into a coding agent's configuration. The server lives in
// tfork/mcp/.

#include "tfork/cli/command.hpp"

namespace tfork::commands {

void register_mcp(CLI::App& root, cli::Context& context);

}  // namespace tfork::commands
