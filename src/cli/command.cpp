#include "tfork/cli/command.hpp"

#include <algorithm>
#include <cstring>

namespace tfork::cli {
namespace {
std::vector<RegisteredCommand>& registry() {
  static std::vector<RegisteredCommand> commands;
  return commands;
}
}  // namespace

bool register_command(const char* name, CommandRegistrar registrar) {
  registry().push_back({name, registrar});
  return true;
}

std::vector<RegisteredCommand> registered_commands() {
  auto commands = registry();
  std::ranges::sort(commands,
                    [](const auto& a, const auto& b) { return std::strcmp(a.name, b.name) < 0; });
  return commands;
}

}  // namespace tfork::cli
