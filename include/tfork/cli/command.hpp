#pragma once
// Subcommand registration: a subcommand is one file under src/commands/ that ends with
// TFORK_COMMAND(register_x). register_x adds its CLI11 subcommand to the root and sets a
// callback that runs the command; results go through the Context's renderer.

#include <vector>

namespace CLI {
class App;
}

namespace tfork::cli {

class Context;

using CommandRegistrar = void (*)(CLI::App& root, Context& context);

// Called from static initialisers; the root adds the commands in name order.
bool register_command(const char* name, CommandRegistrar registrar);

struct RegisteredCommand {
  const char* name;
  CommandRegistrar registrar;
};
std::vector<RegisteredCommand> registered_commands();  // sorted by name

}  // namespace tfork::cli

#define TFORK_COMMAND(name, registrar)                           \
  [[maybe_unused]] static const bool tfork_command_registered_ = \
      ::tfork::cli::register_command(name, registrar)
