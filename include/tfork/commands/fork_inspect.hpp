#pragma once
// `fork head` and `fork ls`: registered under the `fork` group by register_fork (fork.cpp).

namespace CLI {
class App;
}

namespace tfork::cli {
class Context;
}

namespace tfork::commands {

void add_fork_head(CLI::App& fork, cli::Context& context);
void add_fork_ls(CLI::App& fork, cli::Context& context);

}  // namespace tfork::commands
