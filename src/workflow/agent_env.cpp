// SPDX-License-Identifier: Apache-2.0
#include "tfork/workflow/agent_env.hpp"

#include "tfork/output/render.hpp"
#include "tfork/rules/bucket_name.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <fstream>
#include <set>

namespace tfork::workflow {
namespace {

// cli.md §11, plus the other ways the AWS SDKs find credentials on their own (web identity,
// container endpoints), which an agent must not reach either.
constexpr std::array<std::string_view, 15> k_removed = {
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "TIGRIS_SESSION_TOKEN",
    "AWS_CREDENTIAL_EXPIRATION",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "TIGRIS_ORGANIZATION_ID",
    "TIGRIS_IAM_ENDPOINT",
};

[[noreturn]] void not_found(std::string code, std::string message) {
  throw TforkError(ErrorKind::not_found, std::move(code), std::move(message));
}

std::size_t select_index(const Manifest& manifest, std::string_view selector) {
  const bool numeric = !selector.empty() &&
                       std::ranges::all_of(selector, [](char c) { return c >= '0' && c <= '9'; });
  // A bucket name can be all digits too ("123"): an exact name wins over an index.
  for (std::size_t i = 0; i < manifest.forks.size(); ++i)
    if (manifest.forks[i].bucket == selector) return i;
  if (numeric && selector.size() <= 9) {
    const auto index = std::stoul(std::string(selector));
    if (index >= 1 && index <= manifest.forks.size()) return index - 1;
    not_found("NoSuchFork",
              fmt::format("no fork {} in the manifest: it has {} fork{} (1 to {})", selector,
                          manifest.forks.size(), manifest.forks.size() == 1 ? "" : "s",
                          manifest.forks.size()));
  }
  not_found("NoSuchFork", fmt::format("no fork named '{}' in the manifest", selector));
}

// cli.md §11, in output order; `env_of` gives each its value.
constexpr std::array<std::string_view, 17> k_variable_names = {
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT_URL_IAM",
    "AWS_REGION",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "TIGRIS_STORAGE_ACCESS_KEY_ID",
    "TIGRIS_STORAGE_SECRET_ACCESS_KEY",
    "TIGRIS_STORAGE_ENDPOINT",
    "TIGRIS_STORAGE_BUCKET",
    "TIGRIS_BUCKET",
    "TIGRIS_ACCESS_KEY_ID",
    "TIGRIS_SECRET_ACCESS_KEY",
    "TFORK_BUCKET",
    "TFORK_AGENT_INDEX",
};

AgentEnv env_of(const Manifest& manifest, std::size_t position) {
  const auto& fork = manifest.forks[position];
  if (const auto problem = rules::bucket_name_problem(fork.bucket))
    usage_error(
        fmt::format("the manifest names fork {} at position {}, which is not a valid "
                    "bucket name ({}): refusing to use it",
                    output::printable(fork.bucket), position + 1, *problem));
  if (fork.status != ForkStatus::created && fork.status != ForkStatus::exists)
    not_found("NoSuchFork", fmt::format("fork {} is {} in the manifest: it has no environment "
                                        "to give",
                                        fork.bucket, status_name(fork.status)));
  if (fork.key_revoked)
    not_found("NoAccessKey",
              fmt::format("fork {}'s access key was revoked by teardown: it has no environment "
                          "to give",
                          fork.bucket));
  if (fork.access_key_id.empty() || fork.secret_access_key.empty())
    not_found(
        "NoAccessKey",
        fork.role
            ? fmt::format("fork {} has no access key (its key was not created)", fork.bucket)
            : fmt::format("fork {} has no access key (created with --keys none)", fork.bucket));
  const std::string iam_endpoint =
      manifest.iam_endpoint.empty() ? manifest.endpoint : manifest.iam_endpoint;
  AgentEnv env;
  env.bucket = fork.bucket;
  env.index = position + 1;
  // Every name each client family reads (issue 7 §2): the AWS CLI and SDKs, the Tigris SDKs
  // (TIGRIS_STORAGE_*) and the Tigris CLI (AWS_* first, then TIGRIS_STORAGE_*).
  env.variables = {
      {"AWS_ACCESS_KEY_ID", fork.access_key_id},
      {"AWS_SECRET_ACCESS_KEY", fork.secret_access_key},
      {"AWS_ENDPOINT_URL", manifest.endpoint},
      {"AWS_ENDPOINT_URL_S3", manifest.endpoint},
      {"AWS_ENDPOINT_URL_IAM", iam_endpoint},
      {"AWS_REGION", "auto"},
      {"AWS_SHARED_CREDENTIALS_FILE", std::string(k_empty_file)},
      {"AWS_CONFIG_FILE", std::string(k_empty_file)},
      {"TIGRIS_STORAGE_ACCESS_KEY_ID", fork.access_key_id},
      {"TIGRIS_STORAGE_SECRET_ACCESS_KEY", fork.secret_access_key},
      {"TIGRIS_STORAGE_ENDPOINT", manifest.endpoint},
      {"TIGRIS_STORAGE_BUCKET", fork.bucket},
      // The storagesdk adapter for Tigris (tigris-wire §10).
      {"TIGRIS_BUCKET", fork.bucket},
      {"TIGRIS_ACCESS_KEY_ID", fork.access_key_id},
      {"TIGRIS_SECRET_ACCESS_KEY", fork.secret_access_key},
      {"TFORK_BUCKET", fork.bucket},
      {"TFORK_AGENT_INDEX", std::to_string(env.index)},
  };
  env.unset.assign(k_removed.begin(), k_removed.end());
  return env;
}

}  // namespace

std::span<const std::string_view> removed_variables() {
  return k_removed;
}

std::span<const std::string_view> agent_variable_names() {
  return k_variable_names;
}

AgentEnv agent_env(const Manifest& manifest, std::string_view selector) {
  return env_of(manifest, select_index(manifest, selector));
}

std::vector<AgentEnv> agent_envs(const Manifest& manifest) {
  std::vector<AgentEnv> envs;
  for (std::size_t i = 0; i < manifest.forks.size(); ++i) {
    const auto& fork = manifest.forks[i];
    if (fork.status != ForkStatus::created && fork.status != ForkStatus::exists) continue;
    if (fork.access_key_id.empty() || fork.secret_access_key.empty() || fork.key_revoked) continue;
    envs.push_back(env_of(manifest, i));
  }
  return envs;
}

std::string shell_quote(std::string_view text) {
  const bool safe = !text.empty() && std::ranges::all_of(text, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_-./:@%+=,").find(c) != std::string_view::npos;
  });
  return safe ? std::string(text) : output::shell_quote(text);
}

std::string to_shell(const AgentEnv& env) {
  std::string out = "unset";
  for (const auto& name : env.unset)
    out += " " + name;
  out += "\n";
  for (const auto& [name, value] : env.variables)
    out += fmt::format("export {}={}\n", name, shell_quote(value));
  return out;
}

std::string to_fish(const AgentEnv& env) {
  std::string out;
  for (const auto& name : env.unset)
    out += "set -e " + name + "\n";
  for (const auto& [name, value] : env.variables) {
    std::string quoted = "'";
    for (const char c : value) {
      if (c == '\'' || c == '\\') quoted += '\\';
      quoted += c;
    }
    out += fmt::format("set -gx {} {}'\n", name, quoted);
  }
  return out;
}

std::string to_k8s_secret(const AgentEnv& env) {
  std::string out = fmt::format(
      "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {}\n  labels:\n"
      "    app.kubernetes.io/managed-by: tfork\ntype: Opaque\nstringData:\n",
      output::Json("tfork-" + env.bucket).dump());
  // A JSON string is a YAML double-quoted scalar: any value, control characters escaped.
  for (const auto& [name, value] : env.variables)
    out += fmt::format("  {}: {}\n", name, output::Json(value).dump());
  return out;
}

GithubEnv to_github(const AgentEnv& env) {
  GithubEnv out;
  std::set<std::string, std::less<>> masked;
  for (const auto& [name, value] : env.variables) {
    // A delimiter the value cannot hold, as the environment-file format asks.
    std::string delimiter = "TFORK_EOF";
    while (value.find(delimiter) != std::string::npos)
      delimiter += "_";
    out.env_file += fmt::format("{}<<{}\n{}\n{}\n", name, delimiter, value, delimiter);
    if (name.find("SECRET") != std::string::npos && !value.empty() && masked.insert(value).second)
      out.masks += "::add-mask::" + value + "\n";
  }
  return out;
}

std::string to_dotenv(const AgentEnv& env) {
  std::string out = "# tfork agent environment of " + env.bucket + "; also remove:";
  for (const auto& name : env.unset)
    out += " " + name;
  out += "\n";
  for (const auto& [name, value] : env.variables) {
    // Bare when nothing needs quoting, as `docker run --env-file` and podman read a value
    // verbatim (quotes included); quoted for dotenv readers otherwise.
    if (shell_quote(value) == value) {
      out += fmt::format("{}={}\n", name, value);
      continue;
    }
    std::string quoted;
    for (const char c : value) {
      if (c == '"' || c == '\\') quoted += '\\';
      if (c == '\n') {
        quoted += "\\n";
        continue;
      }
      quoted += c;
    }
    out += fmt::format("{}=\"{}\"\n", name, quoted);
  }
  return out;
}

output::Json to_json(const AgentEnv& env) {
  output::Json json = output::Json::object();
  for (const auto& [name, value] : env.variables)
    json[name] = value;
  for (const auto& name : env.unset)
    json[name] = nullptr;
  return json;
}

std::vector<std::string> agent_process_environment(const AgentEnv& env,
                                                   std::span<const std::string> base,
                                                   std::span<const std::string> pass,
                                                   std::string_view home) {
  std::set<std::string, std::less<>> agent_names;
  for (const auto& [name, value] : env.variables)
    agent_names.insert(name);
  const auto allowed = [&](std::string_view name) {
    if (agent_names.contains(name)) return false;
    if (name == "PATH" || name == "LANG" || name == "LANGUAGE" || name == "TERM" || name == "TZ" ||
        name.starts_with("LC_"))
      return true;
    return std::ranges::find(pass, name) != pass.end();
  };
  std::vector<std::string> out;
  for (const auto& entry : base) {
    const auto equals = entry.find('=');
    if (equals != std::string::npos && allowed(std::string_view(entry).substr(0, equals)))
      out.push_back(entry);
  }
  if (!home.empty()) out.push_back("HOME=" + std::string(home));
  for (const auto& [name, value] : env.variables)
    out.push_back(name + "=" + value);
  return out;
}

}  // namespace tfork::workflow

namespace tfork::workflow {

namespace {

// A manifest's document when `path` holds one (small enough, JSON, with a "forks" array).
std::optional<nlohmann::ordered_json> manifest_document(const std::filesystem::path& path) {
  std::error_code ec;
  // Manifests are small; anything large is not one.
  if (std::filesystem::file_size(path, ec) > 64 * 1024 * 1024 || ec) return std::nullopt;
  std::ifstream in(path);
  auto json = nlohmann::ordered_json::parse(in, nullptr, false);
  if (json.is_discarded() || !json.is_object() || !json.contains("forks") ||
      !json["forks"].is_array())
    return std::nullopt;
  return json;
}

}  // namespace

bool is_manifest_file(const std::filesystem::path& path) {
  return manifest_document(path).has_value();
}

std::optional<std::string> agent_key_hint(std::string_view access_key_id,
                                          const std::filesystem::path& dir) {
  if (access_key_id.empty()) return std::nullopt;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const auto& path = it->path();
    if (path.extension() != ".json" || !it->is_regular_file(ec)) continue;
    const auto json = manifest_document(path);
    if (!json) continue;
    for (const auto& fork : (*json)["forks"]) {
      if (!fork.is_object() || !fork.contains("access_key_id") ||
          !fork["access_key_id"].is_string() || fork["access_key_id"] != access_key_id)
        continue;
      const auto bucket = fork.contains("bucket") && fork["bucket"].is_string()
                              ? fork["bucket"].get<std::string>()
                              : std::string("?");
      return fmt::format(
          "the access key {} is the agent key of fork {} (manifest {}): it reaches only that "
          "fork. Run operator commands with your own credentials, and agents through "
          "`tfork fork exec` or a subshell, not an eval of `fork env` in your shell",
          access_key_id, bucket, path.filename().string());
    }
  }
  return std::nullopt;
}

}  // namespace tfork::workflow
