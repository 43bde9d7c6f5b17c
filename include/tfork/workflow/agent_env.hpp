#pragma once
// `fork env` (cli.md §2): the environment one agent needs to reach its own fork, read from a
// manifest. The shell form is meant for `eval "$(tfork fork env ...)"`, so every value is
// quoted for the POSIX shell.

#include "tfork/output/render.hpp"
#include "tfork/workflow/manifest.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfork::workflow {

struct AgentEnv {
  std::string bucket;
  std::vector<std::pair<std::string, std::string>> variables;  // in output order
};

// The fork chosen by a 1-based index or by its bucket name. Throws TforkError(not_found)
// for no such fork, and for a fork that has no usable key (--keys none, failed, rolled back).
AgentEnv agent_env(const Manifest& manifest, std::string_view selector);

// 'text' for the POSIX shell (bare when every character is safe).
std::string shell_quote(std::string_view text);

// `unset AWS_SESSION_TOKEN` (a token from the caller's shell would break the agent's key),
// then one `export NAME=value` line per variable.
std::string to_shell(const AgentEnv& env);
output::Json to_json(const AgentEnv& env);  // {"NAME": "value", ...}

}  // namespace tfork::workflow
