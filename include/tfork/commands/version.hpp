// SPDX-License-Identifier: Apache-2.0
#pragma once
// tfork version (also `tfork --version`).

#include "tfork/cli/command.hpp"

namespace tfork::commands {

void register_version(CLI::App& root, cli::Context& context);

}  // namespace tfork::commands
