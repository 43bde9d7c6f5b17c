#include "tfork/workflow/agent_env.hpp"

#include "tfork/output/render.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tfork::workflow {
namespace {

[[noreturn]] void not_found(std::string code, std::string message) {
  throw TforkError(ErrorKind::not_found, std::move(code), std::move(message));
}

const ManifestFork& select_fork(const Manifest& manifest, std::string_view selector) {
  const bool numeric = !selector.empty() &&
                       std::ranges::all_of(selector, [](char c) { return c >= '0' && c <= '9'; });
  // A bucket name can be all digits too ("123"): an exact name wins over an index.
  for (const auto& fork : manifest.forks)
    if (fork.bucket == selector) return fork;
  if (numeric && selector.size() <= 9) {
    const auto index = std::stoul(std::string(selector));
    if (index >= 1 && index <= manifest.forks.size()) return manifest.forks[index - 1];
    not_found("NoSuchFork",
              fmt::format("no fork {} in the manifest: it has {} fork{} (1 to {})", selector,
                          manifest.forks.size(), manifest.forks.size() == 1 ? "" : "s",
                          manifest.forks.size()));
  }
  not_found("NoSuchFork", fmt::format("no fork named '{}' in the manifest", selector));
}

}  // namespace

AgentEnv agent_env(const Manifest& manifest, std::string_view selector) {
  const auto& fork = select_fork(manifest, selector);
  if (fork.status != ForkStatus::created && fork.status != ForkStatus::exists)
    not_found("NoSuchFork", fmt::format("fork {} is {}: it has no environment to give", fork.bucket,
                                        status_name(fork.status)));
  if (fork.access_key_id.empty() || fork.secret_access_key.empty())
    not_found(
        "NoAccessKey",
        fork.role
            ? fmt::format("fork {} has no access key (its key was not created)", fork.bucket)
            : fmt::format("fork {} has no access key (created with --keys none)", fork.bucket));
  AgentEnv env;
  env.bucket = fork.bucket;
  env.variables = {{"AWS_ACCESS_KEY_ID", fork.access_key_id},
                   {"AWS_SECRET_ACCESS_KEY", fork.secret_access_key},
                   {"AWS_ENDPOINT_URL", manifest.endpoint}};
  if (!manifest.iam_endpoint.empty() && manifest.iam_endpoint != manifest.endpoint)
    env.variables.emplace_back("AWS_ENDPOINT_URL_IAM", manifest.iam_endpoint);
  env.variables.emplace_back("AWS_REGION", "auto");
  env.variables.emplace_back("TFORK_BUCKET", fork.bucket);
  return env;
}

std::string shell_quote(std::string_view text) {
  const bool safe = !text.empty() && std::ranges::all_of(text, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_-./:@%+=,").find(c) != std::string_view::npos;
  });
  return safe ? std::string(text) : output::shell_quote(text);
}

std::string to_shell(const AgentEnv& env) {
  std::string out = "unset AWS_SESSION_TOKEN\n";
  for (const auto& [name, value] : env.variables)
    out += fmt::format("export {}={}\n", name, shell_quote(value));
  return out;
}

output::Json to_json(const AgentEnv& env) {
  output::Json json = output::Json::object();
  for (const auto& [name, value] : env.variables)
    json[name] = value;
  return json;
}

}  // namespace tfork::workflow
