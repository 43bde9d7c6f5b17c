// SPDX-License-Identifier: Apache-2.0
#pragma once
// tfork teardown (cli.md §5). The workflow lives in tfork/workflow/teardown.hpp.

#include "tfork/cli/command.hpp"

namespace tfork::commands {

void register_teardown(CLI::App& root, cli::Context& context);

}  // namespace tfork::commands
