// SPDX-License-Identifier: Apache-2.0
#pragma once
// tfork serve (cli.md §8): the local Tigris-compatible store. The server lives in
// tfork/server/serve.hpp.

#include "tfork/cli/command.hpp"

namespace tfork::commands {

void register_serve(CLI::App& root, cli::Context& context);

}  // namespace tfork::commands
