// SPDX-License-Identifier: Apache-2.0
#pragma once
// tfork run (cli.md §10): fork create + fork exec + teardown of the forks not kept, in one
// command; the manifest stays. Defined in fork_exec.cpp, next to fork exec.

namespace CLI {
class App;
}

namespace tfork::cli {
class Context;
}

namespace tfork::commands {

void register_run(CLI::App& root, cli::Context& context);

}  // namespace tfork::commands
