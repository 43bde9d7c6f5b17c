// SPDX-License-Identifier: Apache-2.0
#pragma once
// `tfork mcp config CLIENT` and `tfork mcp install CLIENT` (cli.md §13): the entry that starts
// `tfork mcp` as a stdio server, in the form each coding agent's configuration file takes, and
// its merge into that file: a backup first, every other server kept, nothing rewritten when
// the entry is already there.
//
//   claude-code  ./.mcp.json (project scope)     {"mcpServers": {"tfork": {"type": "stdio", ...}}}
//   cursor       ~/.cursor/mcp.json              {"mcpServers": {"tfork": {...}}}
//   vscode       ./.vscode/mcp.json              {"servers": {"tfork": {"type": "stdio", ...}}}
//   codex        $CODEX_HOME/config.toml         [mcp_servers.tfork] command, args
//                (~/.codex/config.toml)
//   gemini       ~/.gemini/settings.json         {"mcpServers": {"tfork": {...}}}

#include "tfork/cli/config.hpp"

#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::mcp {

enum class ClientApp { claude_code, cursor, vscode, codex, gemini };

std::span<const std::string_view> client_names();  // "claude-code", "cursor", ...
std::optional<ClientApp> parse_client(std::string_view name);

struct ServerCommand {
  std::string command;  // the tfork executable, absolute
  std::vector<std::string> args;
};

// What `tfork mcp config CLIENT` prints: the whole file that would hold only this server.
std::string config_snippet(ClientApp client, const ServerCommand& server);

// Where the client reads its servers from (see above), for `install` without --config-path.
// Throws TforkError(usage) when HOME is needed and unset.
std::filesystem::path default_config_path(ClientApp client, const cli::Environment& env,
                                          const std::filesystem::path& working_directory);

// `existing` (a client's file, "" when it does not exist yet) with the tfork entry set and
// everything else kept. Throws TforkError(usage) for a file it cannot read safely (not JSON, a
// codex entry written in a form it does not rewrite).
std::string merged_config(ClientApp client, std::string_view existing, const ServerCommand& server);

struct InstallOutcome {
  std::filesystem::path file;
  bool changed = false;                         // false: the entry was there already
  std::optional<std::filesystem::path> backup;  // the previous file, copied first
};
// Reads `file`, merges, and when that changes anything copies the old file to `<file>.bak`
// and writes the new one atomically with the old file's mode (0600 for a new file).
InstallOutcome install_config(ClientApp client, const ServerCommand& server,
                              const std::filesystem::path& file);

}  // namespace tfork::mcp
