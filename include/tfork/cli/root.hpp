// SPDX-License-Identifier: Apache-2.0
#pragma once
// The CLI11 root: global options (cli.md §3) and every registered subcommand.

#include "tfork/cli/context.hpp"

#include <CLI/CLI.hpp>

#include <memory>

namespace tfork::cli {

// Every subcommand, in name order: the one list of what tfork can do.
void register_commands(CLI::App& app, Context& context);

std::unique_ptr<CLI::App> make_app(Context& context);

// Parses, runs the selected command and returns the process exit code. Every result and
// every error ends here: the result on stdout, the error as one line on stderr (or one JSON
// object with --output json), and the exit code of cli.md §6.
int run(int argc, char** argv);
// The same with a given context (its injected environment), for tests.
int run(int argc, char** argv, Context& context);

}  // namespace tfork::cli
