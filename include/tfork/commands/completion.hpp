// SPDX-License-Identifier: Apache-2.0
#pragma once
// tfork completion bash|zsh|fish (cli.md §2): scripts generated from the CLI11 tree.

#include "tfork/cli/command.hpp"

namespace tfork::commands {

// The tree is read when the command runs, so the order of registration does not matter.
void register_completion(CLI::App& root, cli::Context& context);

}  // namespace tfork::commands
