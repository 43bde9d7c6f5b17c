// tfork version: prints the version (also `tfork --version`).
#include "tfork/version.hpp"

#include "tfork/cli/command.hpp"
#include "tfork/cli/context.hpp"

#include <CLI/CLI.hpp>

namespace tfork::commands {
namespace {

void register_version(CLI::App& root, cli::Context& context) {
  auto* command = root.add_subcommand("version", "Print the version of tfork");
  command->callback([&context] {
    context.emit(output::Json{{"version", k_version}}, std::string("tfork ") + k_version + "\n");
  });
}

}  // namespace
}  // namespace tfork::commands

TFORK_COMMAND("version", tfork::commands::register_version);
