// SPDX-License-Identifier: Apache-2.0
#include "tfork/commands/fork_create_options.hpp"

#include "tfork/cli/values.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>

namespace tfork::commands {

void add_fork_create_options(CLI::App& command, ForkCreateOptions& options, bool for_run) {
  auto* count = command
                    .add_option("-n,--count", options.count,
                                fmt::format("How many forks, 1-{}: <prefix>-1 ... <prefix>-N",
                                            workflow::k_max_forks))
                    ->check(cli::whole_number("-n", 1, workflow::k_max_forks));
  if (for_run) count->required();
  command.add_option("--prefix", options.prefix,
                     "Fork name prefix (default <source>-fork-<unix-ms>, with <source> cut "
                     "short, and any '-' or '.' it then ends with dropped, so that "
                     "<prefix>-<N> fits in 63 characters)");
  command
      .add_option("--snapshot", options.snapshot,
                  "Fork from this snapshot (a version that ListBucketSnapshots lists, or a "
                  "name: its newest version) instead of taking one")
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            // `--snapshot "$v"` after a failed `snapshot take` must not take a new one.
            if (value.empty())
              return "--snapshot is empty (did the command that printed it fail?): give a "
                     "version or a name, or leave --snapshot out to take a snapshot";
            return {};
          },
          "VERSION|NAME"));
  command.add_flag("--any-version", options.any_version,
                   "Accept any --snapshot VERSION (a point in time), listed or not");
  command.add_option("--snapshot-name", options.snapshot_name,
                     "Name of the snapshot taken (default 'tfork <prefix>')");
  if (for_run) {
    command.add_option("--keys", options.keys, "Key per fork: editor (default) or readonly")
        ->transform(cli::one_of("--keys", {"editor", "readonly"}));
  } else {
    command.add_option("--keys", options.keys, "Key per fork: editor (default), readonly, none")
        ->transform(cli::one_of("--keys", {"editor", "readonly", "none"}));
  }
  command
      .add_option("--expires-in", options.expires_in,
                  "The forks expire DURATION from now (1s up to 366d: 90s, 30m, 12h, 7d, 2w); "
                  "recorded in the name of the snapshot taken (so the service keeps it) and in "
                  "the manifest; teardown --expired removes them. Not with --snapshot")
      ->type_name("DURATION");
  command
      .add_option("--manifest", options.manifest,
                  "Keep the fork set (with secrets, mode 0600) in FILE, updated as it "
                  "comes into being (default ./<prefix>.manifest.json when keys are "
                  "minted); never replaces another run's manifest (exit 6)" +
                      std::string(for_run ? "" : " unless --exist-ok adopts it"))
      ->type_name("FILE");
}

workflow::ForkCreatePlan plan_fork_create(const ForkCreateOptions& options, std::int64_t now_ms) {
  workflow::ForkCreateRequest request;
  request.source = options.source;
  request.names = options.names;
  request.count = options.count;
  request.prefix = options.prefix;
  request.snapshot = options.snapshot;
  request.any_version = options.any_version;
  request.snapshot_name = options.snapshot_name;
  request.keys = options.keys;
  if (!options.manifest.empty()) request.manifest_path = options.manifest;
  request.keep_partial = options.keep_partial;
  request.exist_ok = options.exist_ok;
  request.add = options.add;
  request.expires_in = options.expires_in;
  return workflow::plan_fork_create(request, now_ms);
}

std::int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace tfork::commands
