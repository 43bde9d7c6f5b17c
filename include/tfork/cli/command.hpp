// SPDX-License-Identifier: Apache-2.0
#pragma once
// How a command meets the root. Each command has a `register_x(parent, context)` that adds its
// CLI11 subcommand and, with `on_run`, what it does; src/cli/root.cpp calls them from one
// list (`register_commands`). A command never prints its result and never picks an exit
// code: it returns a CommandResult, and `cli::run` alone turns that into stdout, the error
// report on stderr (one JSON object with --output json) and the exit code of cli.md §6.

#include "tfork/core/error.hpp"
#include "tfork/output/render.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace CLI {
class App;
}

namespace tfork::cli {

class Context;

struct CommandResult {
  // The result for scripts, printed on stdout with --output json. A command whose output is
  // not a document (a completion script, serve's export lines) leaves it empty and `text`
  // is printed whatever the format.
  std::optional<output::Json> document;
  std::string text;            // the result for people (a table), printed on stdout
  std::string notice;          // one line for people on stderr: table output only, not with -q
  std::optional<Error> error;  // set: the command failed (maybe after a partial result);
                               // its kind is the exit code
};

using CommandRun = std::function<CommandResult()>;

// Makes `run` what `command` does when the command line selects it; `cli::run` calls it once
// parsing has succeeded.
void on_run(CLI::App& command, Context& context, CommandRun run);

// A result document with its table text.
CommandResult document(output::Json json, std::string text);

// Throws usage_error unless `name` is a valid bucket name (tigris::bucket_name_problem);
// `what` names the value in the message: "invalid source bucket name 'X': ...".
void require_bucket_name(std::string_view name, std::string_view what = "bucket");

}  // namespace tfork::cli
