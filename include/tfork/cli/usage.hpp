// SPDX-License-Identifier: Apache-2.0
#pragma once
// The command line as people type it (issue 11): the words they use for a command (aliases),
// what they meant when a word is not a command, and where to look for help.

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::cli {

// Adds the synonyms people reach for to every subcommand below `app`: list for ls,
// delete and remove for rm, new for create.
void add_aliases(CLI::App& app);

// "tfork fork create": the words that select `app` from the root.
std::string command_path(const CLI::App& app);

// The deepest subcommand that parsing had reached (the root when none).
CLI::App& deepest_parsed(CLI::App& root);

// The subcommand of `parent` named or aliased `word`, or nullptr.
CLI::App* find_subcommand(CLI::App& parent, std::string_view word);

// The nearest subcommand name of `parent` to a mistyped `word` (edit distance, or a prefix),
// or nullopt when nothing is near enough to be a likely meaning.
std::optional<std::string> nearest_subcommand(CLI::App& parent, std::string_view word);

// When `arguments` (argv without the program name) name a command that does not exist under
// the deepest command parsing reached, the message that says so and suggests the nearest:
// "unknown command 'lst' for 'tfork fork'; did you mean 'ls'?".
std::optional<std::string> unknown_command_message(CLI::App& root,
                                                   const std::vector<std::string>& arguments);

// When `arguments` hold an option that neither the command it follows nor any command above
// it knows, the message that says so and suggests the nearest ("unknown option '--prefx' for
// 'tfork fork create'; did you mean '--prefix'?").
std::optional<std::string> unknown_option_message(CLI::App& root,
                                                  const std::vector<std::string>& arguments);

// Whether the command line or TFORK_OUTPUT asks for JSON (--json, -o json, --output json,
// --output=json, -ojson): read before parsing, so that a parse error is JSON too.
bool asks_for_json(const std::vector<std::string>& arguments,
                   const std::optional<std::string>& tfork_output);

}  // namespace tfork::cli
