// SPDX-License-Identifier: Apache-2.0
#include "tfork/cli/command.hpp"

#include "tfork/cli/context.hpp"
#include "tfork/tigris/buckets.hpp"

#include <CLI/CLI.hpp>

namespace tfork::cli {

void on_run(CLI::App& command, Context& context, CommandRun run) {
  // CLI11 calls this once the command line parsed; the command itself runs afterwards, in
  // cli::run, so that its result takes the one road to output and exit code.
  command.callback([&context, run = std::move(run)] { context.selected_command = run; });
}

CommandResult document(output::Json json, std::string text) {
  CommandResult result;
  result.document = std::move(json);
  result.text = std::move(text);
  return result;
}

void require_bucket_name(std::string_view name, std::string_view what) {
  if (auto problem = tigris::bucket_name_problem(name))
    usage_error("invalid " + std::string(what) + " name '" + std::string(name) + "': " + *problem);
}

}  // namespace tfork::cli
