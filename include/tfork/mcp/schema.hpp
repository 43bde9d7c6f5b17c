// SPDX-License-Identifier: Apache-2.0
#pragma once
// Checks a tool's arguments against its inputSchema before the tool runs (MCP 2025-11-25
// server/tools: "Servers MUST validate all tool inputs"). The tools' schemas use a small part
// of JSON Schema 2020-12, and this checks exactly that part: type (object, string, integer,
// number, boolean, array, null, or a list of them), anyOf, properties, required,
// additionalProperties: false, enum,
// minimum/maximum, minLength/maxLength, items, minItems/maxItems. Annotations (description,
// default, title) are ignored. A keyword outside that part is a programming error in a
// schema, reported as such.

#include "tfork/mcp/json_rpc.hpp"

#include <optional>
#include <string>

namespace tfork::mcp {

// Why `value` does not match `schema`, in one sentence naming the argument ("confirm must be
// a boolean, got the string \"true\""), or nullopt when it matches.
std::optional<std::string> schema_violation(const Json& schema, const Json& value);

}  // namespace tfork::mcp
