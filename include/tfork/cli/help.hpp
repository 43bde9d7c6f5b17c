// SPDX-License-Identifier: Apache-2.0
#pragma once
// The help texts (issue 26 §4): every command's --help in the same shape, as gh shows it —
// usage, arguments, its own options with their values named in words (N, DURATION, table|json;
// never CLI11's TEXT or UINT:INT 1-100000), the global options the command honours, one or two
// examples, then the command's notes and the exit codes.

#include <CLI/CLI.hpp>

#include <initializer_list>
#include <memory>
#include <string_view>

namespace tfork::cli {

// The global options a command honours, by family (shown in its help; cli.md §3, §6).
// Logging (-v, --debug, -q, --no-color) is honoured everywhere and always listed.
namespace honours {
inline constexpr unsigned output = 1;    // -o/--output, --json
inline constexpr unsigned service = 2;   // endpoints, credentials, addressing, TLS, retries
inline constexpr unsigned batch = 4;     // --concurrency and the progress options
inline constexpr unsigned confirm = 8;   // -y/--yes
inline constexpr unsigned dry_run = 16;  // --dry-run
inline constexpr unsigned client = output | service;
}  // namespace honours

// The formatter of every help text; set on the root before any subcommand is added (a
// subcommand takes its parent's formatter when it is made).
std::shared_ptr<CLI::Formatter> make_help_formatter();

// What `command`'s help shows below its options: the global options it honours (the
// `honours` bits) and examples, each one command line.
void describe(CLI::App& command, unsigned globals,
              std::initializer_list<std::string_view> examples);

}  // namespace tfork::cli
