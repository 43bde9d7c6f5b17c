#pragma once
// The CLI11 root: global options (cli.md §3) and every registered subcommand.

#include "tfork/cli/context.hpp"

#include <CLI/CLI.hpp>

#include <memory>

namespace tfork::cli {

std::unique_ptr<CLI::App> make_app(Context& context);

// Parses and runs; returns the process exit code. Every error ends here: one line on
// stderr (or one JSON object with --output json) and the exit code of cli.md §6.
int run(int argc, char** argv);

}  // namespace tfork::cli
