// SPDX-License-Identifier: Apache-2.0
#pragma once
// A manifest of `forks` live forks run-1 ... run-N, each with an Editor key tid_agentN /
// tsec_agentN, on a local endpoint: what the agent tests start from.

#include "tfork/workflow/manifest.hpp"

#include <string>

namespace tfork::testing {

inline workflow::Manifest agent_manifest(int forks) {
  workflow::Manifest manifest;
  manifest.source = "data";
  manifest.snapshot = "1751631910196672425";
  manifest.endpoint = "http://127.0.0.1:9000";
  manifest.iam_endpoint = "http://127.0.0.1:9000";
  for (int i = 1; i <= forks; ++i) {
    workflow::ManifestFork fork;
    fork.bucket = "run-" + std::to_string(i);
    fork.status = workflow::ForkStatus::created;
    fork.access_key_id = "tid_agent" + std::to_string(i);
    fork.secret_access_key = "tsec_agent" + std::to_string(i);
    fork.role = iam::Role::editor;
    manifest.forks.push_back(fork);
  }
  return manifest;
}

}  // namespace tfork::testing
