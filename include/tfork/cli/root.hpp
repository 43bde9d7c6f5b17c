// SPDX-License-Identifier: Apache-2.0
#pragma once
// The CLI11 root: global options (cli.md §3) and every registered subcommand.

#include "tfork/cli/context.hpp"

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::cli {

// Every subcommand, in name order: the one list of what tfork can do. With `only` naming one
// of them, that one alone (see make_app).
void register_commands(CLI::App& app, Context& context, std::string_view only = {});

// The root with its global options and its commands. When `arguments` name a top-level
// command (its first word that is neither a global option nor an option's value), only that
// command's tree is built: building all of them touches code and memory a run does not need
// (cli.md §9: start-up time, peak memory). Otherwise (no command, `help`, `completion`, a
// typo that wants the nearest name) every command is built.
std::unique_ptr<CLI::App> make_app(Context& context,
                                   const std::vector<std::string>& arguments = {});

// Parses, runs the selected command and returns the process exit code. Every result and
// every error ends here: the result on stdout, the error as one line on stderr (or one JSON
// object with --output json), and the exit code of cli.md §6.
int run(int argc, char** argv);
// The same with a given context (its injected environment), for tests.
int run(int argc, char** argv, Context& context);

}  // namespace tfork::cli
