// SPDX-License-Identifier: Apache-2.0
#pragma once
// The tools of `tfork mcp` (cli.md §13), for the mode the server runs in: operator mode's
// snapshot, fork and object tools on its sources and their forks; agent mode's object tools,
// fork_diff and snapshots on its own fork; --read-only leaves out every tool that changes
// anything. Also the pieces the tool files share: schema builders, cursors, errors that carry
// a document.

#include "tfork/mcp/tool.hpp"
#include "tfork/mcp/workspace.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::mcp {

// The tools of `config`'s mode, in the order tools/list shows them. `config` must outlive them.
std::vector<Tool> make_tools(const ServerConfig& config);

// initialize's instructions for this mode: how the tools fit together and the safety rules.
std::string server_instructions(const ServerConfig& config);

// Opaque paging cursors: the position (and what it belongs to) as hex-encoded JSON.
std::string make_cursor(const Json& position);
// The position of a cursor this server made; TforkError(usage) for anything else.
Json read_cursor(std::string_view cursor);

// Tool files' own pieces (fork_tools.cpp, object_tools.cpp).
void add_fork_tools(std::vector<Tool>& tools, const ServerConfig& config);
void add_object_tools(std::vector<Tool>& tools, const ServerConfig& config);

namespace schema {
// {"type": "string", "description": ...}
Json text(std::string description);
// A bucket name: 3-63 characters.
Json bucket(std::string description);
Json integer(std::string description, std::int64_t minimum, std::int64_t maximum);
Json boolean(std::string description);
// Arguments: {"type": "object", "properties", "required", "additionalProperties": false}.
Json object(Json properties, std::vector<std::string> required = {});
// A result document: open to fields added later (cli.md §6: fields may be added).
Json document(Json properties, std::vector<std::string> required);
// Output: a value of `type` or null; a nullable string; a page's next cursor.
Json nullable(std::string_view type, std::string description);
Json nullable_text(std::string description);
Json next_cursor();
}  // namespace schema

}  // namespace tfork::mcp
