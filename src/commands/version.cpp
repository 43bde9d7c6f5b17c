// SPDX-License-Identifier: Apache-2.0
// tfork version: prints the version (also `tfork --version`).
#include "tfork/commands/version.hpp"

#include "tfork/cli/context.hpp"
#include "tfork/cli/help.hpp"
#include "tfork/version.hpp"

#include <CLI/CLI.hpp>

namespace tfork::commands {

void register_version(CLI::App& root, cli::Context& context) {
  auto* command = root.add_subcommand("version", "Print the version of tfork");
  cli::describe(*command, cli::honours::output, {"tfork version --json"});
  cli::on_run(*command, context, [] {
    return cli::document(output::Json{{"version", k_version}},
                         std::string("tfork ") + k_version + "\n");
  });
}

}  // namespace tfork::commands
