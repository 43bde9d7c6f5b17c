// SPDX-License-Identifier: Apache-2.0
#include "tfork/mcp/client_config.hpp"

#include "tfork/core/error.hpp"
#include "tfork/output/render.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace tfork::mcp {
namespace {

using output::Json;

constexpr std::array<std::string_view, 5> k_names = {"claude-code", "cursor", "vscode", "codex",
                                                     "gemini"};
constexpr std::string_view k_entry = "tfork";

Json server_json(ClientApp client, const ServerCommand& server) {
  Json entry = Json::object();
  // Claude Code and VS Code name the transport; Cursor and Gemini take command/args alone.
  if (client == ClientApp::claude_code || client == ClientApp::vscode) entry["type"] = "stdio";
  entry["command"] = server.command;
  entry["args"] = server.args;
  return entry;
}

std::string_view servers_key(ClientApp client) {
  return client == ClientApp::vscode ? "servers" : "mcpServers";
}

// A TOML basic string (TOML 1.0 §String): quotes, backslashes and control characters escaped.
std::string toml_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\u{:04x}", byte);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string toml_table(const ServerCommand& server) {
  std::string args;
  for (const auto& arg : server.args)
    args += (args.empty() ? "" : ", ") + toml_string(arg);
  return fmt::format("[mcp_servers.{}]\ncommand = {}\nargs = [{}]\n", k_entry,
                     toml_string(server.command), args);
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = std::min(text.find('\n', start), text.size());
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string trimmed(std::string_view line) {
  const auto first = line.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = line.find_last_not_of(" \t\r");
  return std::string(line.substr(first, last - first + 1));
}

// A table header line "[a.b]" (not an array of tables "[[a]]"): its name, else "".
std::string table_name(std::string_view line) {
  const auto text = trimmed(line);
  if (text.size() < 2 || text.front() != '[' || text[1] == '[') return {};
  const auto close = text.find(']');
  if (close == std::string::npos) return {};
  std::string name = text.substr(1, close - 1);
  std::erase_if(name, [](char c) { return c == ' ' || c == '\t'; });
  return name;
}

// codex's config.toml with [mcp_servers.tfork] (and its sub-tables) replaced by ours, every
// other line as it was. No TOML library is at hand, and none is needed: tables are line-based,
// and the forms this does not rewrite (an inline table or dotted keys naming tfork) are refused.
std::string merged_toml(std::string_view existing, const ServerCommand& server) {
  const auto ours = "mcp_servers." + std::string(k_entry);
  std::vector<std::string> kept;
  std::string table;  // the table the current line is in
  bool skipping = false;
  for (const auto& line : split_lines(existing)) {
    if (const auto name = table_name(line); !name.empty()) {
      table = name;
      skipping = name == ours || name.starts_with(ours + ".");
      if (skipping) continue;
    }
    if (skipping) continue;
    const auto text = trimmed(line);
    const bool names_us =
        (table == "mcp_servers" && (text.starts_with(std::string(k_entry) + " ") ||
                                    text.starts_with(std::string(k_entry) + "=") ||
                                    text.starts_with(std::string(k_entry) + "."))) ||
        (table.empty() && text.starts_with(ours));
    if (names_us)
      usage_error("the codex configuration defines mcp_servers." + std::string(k_entry) +
                  " in a form tfork does not rewrite (an inline table or dotted keys); remove it, "
                  "then run install again");
    kept.push_back(line);
  }
  while (!kept.empty() && trimmed(kept.back()).empty())
    kept.pop_back();
  std::string out;
  for (const auto& line : kept)
    out += line + "\n";
  if (!out.empty()) out += "\n";
  return out + toml_table(server);
}

std::string merged_json(ClientApp client, std::string_view existing, const ServerCommand& server) {
  Json document = Json::object();
  if (existing.find_first_not_of(" \t\r\n") != std::string_view::npos) {
    document = Json::parse(existing, nullptr, false);
    if (document.is_discarded() || !document.is_object())
      usage_error(
          "the configuration file is not a JSON object; fix it or name another file "
          "with --config-path (nothing was changed)");
  }
  auto& servers = document[std::string(servers_key(client))];
  if (servers.is_null()) servers = Json::object();
  if (!servers.is_object())
    usage_error(
        fmt::format("\"{}\" in the configuration file is not an object (nothing was "
                    "changed)",
                    servers_key(client)));
  servers[std::string(k_entry)] = server_json(client, server);
  return document.dump(2) + "\n";
}

std::string read_file(const std::filesystem::path& file, bool& exists) {
  std::ifstream in(file, std::ios::binary);
  exists = static_cast<bool>(in);
  if (!exists) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Written next to `file` under a temporary name, then renamed over it (atomic).
void write_atomically(const std::filesystem::path& file, std::string_view text, mode_t mode) {
  std::random_device random;
  const auto temporary = file.string() + fmt::format(".tfork-{:08x}", random());
  const int fd =
      ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0)
    throw TforkError(ErrorKind::other, "WriteFailed",
                     "cannot write " + file.string() + ": " + std::strerror(errno));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                       ::fsync(fd) == 0;
  ::fchmod(fd, mode);
  ::close(fd);
  if (!written || ::rename(temporary.c_str(), file.c_str()) != 0) {
    ::unlink(temporary.c_str());
    throw TforkError(ErrorKind::other, "WriteFailed", "cannot write " + file.string());
  }
}

}  // namespace

std::span<const std::string_view> client_names() {
  return k_names;
}

std::optional<ClientApp> parse_client(std::string_view name) {
  const auto found = std::ranges::find(k_names, name);
  if (found == k_names.end()) return std::nullopt;
  return static_cast<ClientApp>(found - k_names.begin());
}

std::string config_snippet(ClientApp client, const ServerCommand& server) {
  if (client == ClientApp::codex) return toml_table(server);
  return merged_json(client, "", server);
}

std::filesystem::path default_config_path(ClientApp client, const cli::Environment& env,
                                          const std::filesystem::path& working_directory) {
  const auto home = [&] {
    const auto value = env("HOME");
    if (!value) usage_error("HOME is not set: name the file with --config-path");
    return std::filesystem::path(*value);
  };
  switch (client) {
    case ClientApp::claude_code:
      return working_directory / ".mcp.json";
    case ClientApp::cursor:
      return home() / ".cursor" / "mcp.json";
    case ClientApp::vscode:
      return working_directory / ".vscode" / "mcp.json";
    case ClientApp::codex:
      if (const auto codex_home = env("CODEX_HOME"))
        return std::filesystem::path(*codex_home) / "config.toml";
      return home() / ".codex" / "config.toml";
    case ClientApp::gemini:
      return home() / ".gemini" / "settings.json";
  }
  return {};
}

std::string merged_config(ClientApp client, std::string_view existing,
                          const ServerCommand& server) {
  if (client == ClientApp::codex) return merged_toml(existing, server);
  return merged_json(client, existing, server);
}

InstallOutcome install_config(ClientApp client, const ServerCommand& server,
                              const std::filesystem::path& file) {
  bool exists = false;
  const auto existing = read_file(file, exists);
  const auto merged = merged_config(client, existing, server);
  InstallOutcome outcome{file, false, std::nullopt};
  // Idempotent: the entry is there already (in any layout, for JSON files).
  if (exists && merged == existing) return outcome;
  if (exists && client != ClientApp::codex &&
      Json::parse(existing, nullptr, false) == Json::parse(merged))
    return outcome;
  mode_t mode = 0600;
  if (exists) {
    struct stat info {};
    if (::stat(file.c_str(), &info) == 0) mode = info.st_mode & 07777;
    const auto backup = std::filesystem::path(file.string() + ".bak");
    write_atomically(backup, existing, mode);
    outcome.backup = backup;
  } else if (file.has_parent_path()) {
    std::filesystem::create_directories(file.parent_path());
  }
  write_atomically(file, merged, mode);
  outcome.changed = true;
  return outcome;
}

}  // namespace tfork::mcp
