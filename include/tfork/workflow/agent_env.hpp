// SPDX-License-Identifier: Apache-2.0
#pragma once
// The environment of one agent (cli.md §11; issue 7 §2): the one definition that `fork env`
// prints and `fork exec` / `run` give each agent process. An agent's environment reaches its
// own fork and nothing else: it sets every variable the AWS tools, the official Tigris SDKs
// and the Tigris CLI read for credentials and endpoints, and removes every other credential
// source, so that an operator's keys (AWS_*, TIGRIS_STORAGE_*, a profile) never leak into an
// agent. The shell form is meant for `eval` in a subshell, so every value is quoted.

#include "tfork/output/render.hpp"
#include "tfork/workflow/manifest.hpp"

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfork::workflow {

// AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE point here: an empty file that exists on
// every POSIX system and outlives the command that printed it (an eval'd `fork env` needs
// that), so no profile, credential_process or SSO entry can be read.
inline constexpr std::string_view k_empty_file = "/dev/null";

// Credential sources an agent must not inherit: removed from its environment.
std::span<const std::string_view> removed_variables();

// Every name `agent_env` sets (cli.md §11), whatever the fork.
std::span<const std::string_view> agent_variable_names();

struct AgentEnv {
  std::string bucket;
  std::size_t index = 0;                                       // 1-based, in manifest order
  std::vector<std::pair<std::string, std::string>> variables;  // set, in output order
  std::vector<std::string> unset;                              // removed
};

// The fork chosen by a 1-based index or by its bucket name. Throws TforkError(not_found)
// for no such fork, for a fork that is not live by the manifest (failed, rolled back, or
// recorded as torn down), and for one that has no usable key (--keys none, key revoked);
// TforkError(usage) for a fork whose name is not a valid bucket name (a manifest is input:
// a name such as "../x" or one with ESC must never reach a path, a shell or a terminal).
AgentEnv agent_env(const Manifest& manifest, std::string_view selector);

// Every live fork with a key, in manifest order (what `fork exec` runs with no selector).
std::vector<AgentEnv> agent_envs(const Manifest& manifest);

// 'text' for the POSIX shell (bare when every character is safe).
std::string shell_quote(std::string_view text);

// `--format env`: `unset NAME...` then one `export NAME=value` line per variable.
std::string to_shell(const AgentEnv& env);
// `--format dotenv`: NAME=value lines, bare when the value needs no quoting (so that
// `docker run --env-file`, which reads values verbatim, takes them), else NAME="value" (a
// dotenv file cannot unset: a comment lists what the runner must remove).
std::string to_dotenv(const AgentEnv& env);
// `--format fish`: `set -e NAME` for each removed name, then `set -gx NAME 'value'`.
std::string to_fish(const AgentEnv& env);
// `--format k8s-secret`: a Kubernetes Secret (v1, Opaque) named `tfork-<fork>` whose
// stringData holds the variables (for `envFrom: - secretRef:`); JSON-quoted values.
std::string to_k8s_secret(const AgentEnv& env);
// `--format github`: the variables as a GitHub Actions environment file takes them (NAME<<EOF
// blocks, safe for any value), to append to $GITHUB_ENV; and the `::add-mask::` lines for the
// secret values, for the step's own output (the runner masks them in every later log line).
struct GithubEnv {
  std::string env_file;
  std::string masks;
};
GithubEnv to_github(const AgentEnv& env);
// `--format json` / -o json: {"NAME": "value", ..., "REMOVED": null, ...}.
output::Json to_json(const AgentEnv& env);

// Whether `path` is a tfork manifest (a JSON object with a "forks" array): a file that holds
// agents' keys.
bool is_manifest_file(const std::filesystem::path& path);

// When a manifest in `dir` (its *.json files) records `access_key_id` as an agent's key: a
// sentence naming the fork and the manifest, for an error message (an operator command run
// with an agent's key, e.g. after an `eval` of `fork env` in the operator's own shell).
std::optional<std::string> agent_key_hint(std::string_view access_key_id,
                                          const std::filesystem::path& dir);

// The environment of an agent process (cli.md §12), from an allowlist, never by removing
// names: from `base` (NAME=value strings, e.g. environ) only PATH, LANG, LANGUAGE, LC_*, TERM,
// TZ and the `pass` names (--env); HOME=`home` when not empty; then the agent's variables.
std::vector<std::string> agent_process_environment(const AgentEnv& env,
                                                   std::span<const std::string> base,
                                                   std::span<const std::string> pass,
                                                   std::string_view home);

}  // namespace tfork::workflow
