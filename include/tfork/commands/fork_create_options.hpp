// SPDX-License-Identifier: Apache-2.0
#pragma once
// The options `fork create` and `run` share, and the one mapping of them to a fork-create
// request (issue 25 §1): the same checks, help texts and default prefix (cut to fit 63
// characters) for both, so `run` accepts exactly the sources and names `fork create` does.

#include "tfork/workflow/fork_batch.hpp"

#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tfork::commands {

struct ForkCreateOptions {
  std::string source;
  std::vector<std::string> names;  // fork create SOURCE NAME...
  int count = 0;
  std::string prefix;
  std::string snapshot;
  std::optional<std::string> snapshot_name;
  std::string keys = "editor";
  std::string manifest;
  bool any_version = false;
  bool keep_partial = false;
  bool exist_ok = false;
  int add = 0;                            // fork create --add K
  std::optional<std::string> expires_in;  // --expires-in DURATION
};

// -n, --prefix, --snapshot, --any-version, --snapshot-name, --keys, --manifest, --expires-in.
// `for_run`: -n is required and --keys has no `none` (run gives every agent a key).
void add_fork_create_options(CLI::App& command, ForkCreateOptions& options, bool for_run);

// The plan of both commands (workflow::plan_fork_create, the default prefix from `now_ms`; how
// the batch runs comes from cli::Context::batch_settings()). Throws TforkError(usage) before
// anything is sent. Planned twice with the same clock, it names the same manifest: a run plans
// once, claims the manifest (workflow::ManifestClaim), then plans again from what the claimed
// file holds.
workflow::ForkCreatePlan plan_fork_create(const ForkCreateOptions& options, std::int64_t now_ms);
std::int64_t now_ms();  // the wall clock in Unix milliseconds

}  // namespace tfork::commands
