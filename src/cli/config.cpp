// SPDX-License-Identifier: Apache-2.0
#include "tfork/cli/config.hpp"

#include "tfork/core/ascii.hpp"
#include "tfork/core/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace tfork::cli {
namespace {

constexpr std::string_view k_default_endpoint = "https://t3.storage.dev";
constexpr std::string_view k_default_iam_endpoint = "https://iam.storageapi.dev";

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string home_dir(const Environment& env) {
  return env("HOME").value_or("");
}

std::string credentials_path(const Environment& env) {
  if (auto path = env("AWS_SHARED_CREDENTIALS_FILE")) return *path;
  return home_dir(env) + "/.aws/credentials";
}

std::string config_path(const Environment& env) {
  if (auto path = env("AWS_CONFIG_FILE")) return *path;
  return home_dir(env) + "/.aws/config";
}

// What the Tigris CLI saved in ~/.tigris/config.json: in its version 2 layout
// `credentials.temporary` (from a login) before `credentials.saved` (from `tigris configure`),
// each {accessKeyId, secretAccessKey, endpoint}; in the older layout one `credentials` object
// of the same shape. An unreadable or malformed file counts as no file, as the Tigris CLI
// treats it.
struct TigrisCliCredentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string endpoint;
  std::string which;  // "temporary", "saved"
};

std::string tigris_config_path(const Environment& env) {
  return home_dir(env) + "/.tigris/config.json";
}

std::optional<TigrisCliCredentials> tigris_cli_credentials(const Environment& env) {
  if (home_dir(env).empty()) return std::nullopt;
  const auto text = read_file(tigris_config_path(env));
  if (!text) return std::nullopt;
  const auto json = nlohmann::json::parse(*text, nullptr, false);
  if (!json.is_object() || !json.contains("credentials") || !json["credentials"].is_object())
    return std::nullopt;
  auto entry = [](const nlohmann::json& value,
                  std::string which) -> std::optional<TigrisCliCredentials> {
    auto text_field = [&value](const char* name) {
      return value.contains(name) && value[name].is_string() ? value[name].get<std::string>()
                                                             : std::string();
    };
    if (!value.is_object()) return std::nullopt;
    TigrisCliCredentials found{text_field("accessKeyId"), text_field("secretAccessKey"),
                               text_field("endpoint"), std::move(which)};
    if (found.access_key_id.empty() || found.secret_access_key.empty()) return std::nullopt;
    return found;
  };
  const auto& credentials = json["credentials"];
  if (json.contains("version") && json["version"] == 2) {
    for (const char* which : {"temporary", "saved"})
      if (credentials.contains(which))
        if (auto found = entry(credentials[which], which)) return found;
    return std::nullopt;
  }
  return entry(credentials, "saved");
}

// The settings of one profile: the credentials file's [name] over the config file's
// [profile name] ([default] in both for the default profile), as the AWS tools merge them.
struct Profile {
  IniSection settings;
  bool found = false;
};

Profile load_profile(const std::string& name, const Environment& env) {
  Profile profile;
  if (auto text = read_file(config_path(env))) {
    const auto ini = parse_ini(*text);
    const auto section = name == "default" ? ini.find("default") : ini.find("profile " + name);
    if (section != ini.end()) {
      profile.settings = section->second;
      profile.found = true;
    } else if (auto plain = ini.find(name); plain != ini.end()) {
      profile.settings = plain->second;
      profile.found = true;
    }
  }
  if (auto text = read_file(credentials_path(env))) {
    const auto ini = parse_ini(*text);
    if (auto section = ini.find(name); section != ini.end()) {
      for (const auto& [key, value] : section->second)
        profile.settings[key] = value;
      profile.found = true;
    }
  }
  return profile;
}

std::optional<std::string> setting(const Profile& profile, const std::string& key) {
  auto it = profile.settings.find(key);
  if (it == profile.settings.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

std::string selected_profile(const ConfigOverrides& overrides, const Environment& env) {
  if (!overrides.profile.empty()) return overrides.profile;
  return env("AWS_PROFILE").value_or("default");
}

std::string normalise_url(std::string url, std::string_view what) {
  while (!url.empty() && url.back() == '/')
    url.pop_back();
  if (!url.starts_with("http://") && !url.starts_with("https://")) {
    throw TforkError(ErrorKind::usage, "InvalidEndpoint",
                     std::string(what) + " '" + url + "' must start with http:// or https://");
  }
  return url;
}

// Runs credential_process (cli.md §3) and reads its JSON document.
sigv4::Credentials run_credential_process(const std::string& command, const std::string& profile) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    throw TforkError(ErrorKind::auth, "CredentialProcessFailed",
                     "profile '" + profile + "': credential_process could not be started");
  }
  std::string output;
  char buffer[4096];
  while (auto n = std::fread(buffer, 1, sizeof buffer, pipe))
    output.append(buffer, n);
  const int status = ::pclose(pipe);
  if (status != 0) {
    throw TforkError(ErrorKind::auth, "CredentialProcessFailed",
                     "profile '" + profile + "': credential_process exited with status " +
                         std::to_string(WEXITSTATUS(status)));
  }
  const auto doc = nlohmann::json::parse(output, nullptr, false);
  if (!doc.is_object() || !doc.contains("AccessKeyId") || !doc.contains("SecretAccessKey") ||
      !doc["AccessKeyId"].is_string() || !doc["SecretAccessKey"].is_string()) {
    throw TforkError(ErrorKind::auth, "CredentialProcessFailed",
                     "profile '" + profile +
                         "': credential_process did not print a JSON document with "
                         "AccessKeyId and SecretAccessKey");
  }
  sigv4::Credentials credentials{doc["AccessKeyId"].get<std::string>(),
                                 doc["SecretAccessKey"].get<std::string>(), ""};
  if (doc.contains("SessionToken") && doc["SessionToken"].is_string()) {
    credentials.session_token = doc["SessionToken"].get<std::string>();
  }
  return credentials;
}

std::optional<ResolvedCredentials> credentials_from_profile(const std::string& name,
                                                            const Environment& env) {
  const auto profile = load_profile(name, env);
  if (!profile.found) return std::nullopt;
  auto id = setting(profile, "aws_access_key_id");
  auto secret = setting(profile, "aws_secret_access_key");
  if (id && secret) {
    return ResolvedCredentials{{*id, *secret, setting(profile, "aws_session_token").value_or("")},
                               "profile '" + name + "' (shared files)"};
  }
  if (auto process = setting(profile, "credential_process")) {
    return ResolvedCredentials{run_credential_process(*process, name),
                               "profile '" + name + "' (credential_process)"};
  }
  return std::nullopt;
}

}  // namespace

Environment process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  };
}

IniFile parse_ini(std::string_view text) {
  IniFile ini;
  std::string section;
  std::istringstream lines{std::string(text)};
  for (std::string raw; std::getline(lines, raw);) {
    const auto line = ascii::trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = ascii::trim(line.substr(1, line.size() - 2));
      ini[section];
      continue;
    }
    // Nested sub-sections ("s3 =\n  addressing_style = path") arrive as indented lines; they
    // are kept flat, which is all tfork reads of them.
    const auto eq = line.find('=');
    if (eq == std::string::npos || section.empty()) continue;
    ini[section][std::string(ascii::trim(line.substr(0, eq)))] = ascii::trim(line.substr(eq + 1));
  }
  return ini;
}

bool is_tigris_host(std::string_view url) {
  auto host = url.substr(url.find("://") == std::string_view::npos ? 0 : url.find("://") + 3);
  host = host.substr(0, host.find_first_of(":/"));
  for (std::string_view suffix :
       {"storage.dev", "storageapi.dev", "tigris.dev", "tigrisfiles.io", "tigrisdata.io"}) {
    if (host == suffix || (host.size() > suffix.size() && host.ends_with(suffix) &&
                           host[host.size() - suffix.size() - 1] == '.'))
      return true;
  }
  return false;
}

Config resolve_config(const ConfigOverrides& overrides, const Environment& env) {
  Config config;
  const auto profile_name = selected_profile(overrides, env);
  const auto profile = load_profile(profile_name, env);
  if (profile.found) config.profile = profile_name;

  auto first = [](std::initializer_list<std::optional<std::string>> candidates) {
    for (const auto& candidate : candidates)
      if (candidate && !candidate->empty()) return candidate;
    return std::optional<std::string>{};
  };
  auto flag = [](const std::string& value) {
    return value.empty() ? std::nullopt : std::optional<std::string>(value);
  };

  const auto tigris_cli = tigris_cli_credentials(env);
  config.endpoint =
      normalise_url(first({flag(overrides.endpoint_url), env("AWS_ENDPOINT_URL_S3"),
                           env("AWS_ENDPOINT_URL"), env("TIGRIS_STORAGE_ENDPOINT"),
                           setting(profile, "endpoint_url_s3"), setting(profile, "endpoint_url"),
                           tigris_cli ? flag(tigris_cli->endpoint) : std::nullopt})
                        .value_or(std::string(k_default_endpoint)),
                    "endpoint URL");

  // The local store serves both APIs on one port, so a non-Tigris S3 endpoint is also the
  // IAM endpoint (cli.md §3).
  const auto iam_fallback =
      is_tigris_host(config.endpoint) ? std::string(k_default_iam_endpoint) : config.endpoint;
  config.iam_endpoint =
      normalise_url(first({flag(overrides.iam_endpoint_url), env("AWS_ENDPOINT_URL_IAM"),
                           env("TIGRIS_IAM_ENDPOINT"), setting(profile, "endpoint_url_iam")})
                        .value_or(iam_fallback),
                    "IAM endpoint URL");

  // Tigris signs with region auto whatever AWS_REGION says for some other service (issue 7
  // §5); --region still wins. Other S3 endpoints follow the AWS chain.
  if (!overrides.region.empty()) {
    config.region = overrides.region;
  } else if (is_tigris_host(config.endpoint)) {
    config.region = "auto";
  } else {
    config.region =
        first({env("AWS_REGION"), env("AWS_DEFAULT_REGION"), setting(profile, "region")})
            .value_or("auto");
  }

  if (overrides.path_style) {
    config.path_style = *overrides.path_style;
  } else if (auto style = setting(profile, "addressing_style")) {
    config.path_style = *style == "path" || (*style == "auto" && !is_tigris_host(config.endpoint));
  } else if (auto force = env("TIGRIS_FORCE_PATH_STYLE")) {
    config.path_style = *force == "1" || *force == "true" || *force == "yes" || *force == "on";
  } else {
    config.path_style = !is_tigris_host(config.endpoint);
  }

  config.ca_bundle =
      first({flag(overrides.ca_bundle), env("AWS_CA_BUNDLE"), setting(profile, "ca_bundle")})
          .value_or("");

  if (overrides.max_attempts > 0) {
    config.max_attempts = overrides.max_attempts;
  } else if (auto attempts = first({env("AWS_MAX_ATTEMPTS"), setting(profile, "max_attempts")})) {
    try {
      config.max_attempts = std::max(1, std::stoi(*attempts));
    } catch (const std::exception&) {
      throw TforkError(
          ErrorKind::usage, "InvalidMaxAttempts",
          "AWS_MAX_ATTEMPTS / max_attempts must be a whole number, got '" + *attempts + "'");
    }
  }
  return config;
}

ResolvedCredentials resolve_credentials(const ConfigOverrides& overrides, const Environment& env) {
  if (!overrides.profile.empty()) {
    if (auto found = credentials_from_profile(overrides.profile, env)) return *found;
    // Which files were read, and whether they exist: a profile in a file at another path
    // (AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE) is the usual cause.
    const auto read = [](const std::string& path) {
      std::error_code error;
      return std::filesystem::exists(path, error) ? path : path + " (no such file)";
    };
    const bool named = load_profile(overrides.profile, env).found;
    throw TforkError(
        ErrorKind::auth, "NoCredentials",
        fmt::format("profile '{}' {} {} or {}{}", overrides.profile,
                    named ? "has no credentials in" : "is not in", read(credentials_path(env)),
                    read(config_path(env)),
                    named ? " (looked for aws_access_key_id + aws_secret_access_key, or "
                            "credential_process)"
                          : " (set AWS_SHARED_CREDENTIALS_FILE / AWS_CONFIG_FILE for other "
                            "files)"));
  }
  if (auto id = env("AWS_ACCESS_KEY_ID")) {
    if (auto secret = env("AWS_SECRET_ACCESS_KEY")) {
      return {{*id, *secret, env("AWS_SESSION_TOKEN").value_or("")},
              "environment (AWS_ACCESS_KEY_ID)"};
    }
  }
  if (auto id = env("TIGRIS_STORAGE_ACCESS_KEY_ID")) {
    if (auto secret = env("TIGRIS_STORAGE_SECRET_ACCESS_KEY")) {
      return {{*id, *secret, ""}, "environment (TIGRIS_STORAGE_ACCESS_KEY_ID)"};
    }
  }
  const auto profile = env("AWS_PROFILE").value_or("default");
  if (auto found = credentials_from_profile(profile, env)) return *found;
  if (auto found = tigris_cli_credentials(env)) {
    return {{found->access_key_id, found->secret_access_key, ""},
            "Tigris CLI (" + tigris_config_path(env) + ", " + found->which + ")"};
  }
  // Half a key in the environment is the likely mistake: said alone (issue 26 §3).
  for (const auto& [id, secret] :
       {std::pair{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"},
        std::pair{"TIGRIS_STORAGE_ACCESS_KEY_ID", "TIGRIS_STORAGE_SECRET_ACCESS_KEY"}})
    if (env(id) && !env(secret))
      throw TforkError(ErrorKind::auth, "NoCredentials",
                       fmt::format("{} is set but {} is not: set both (or neither)", id, secret));
  throw TforkError(
      ErrorKind::auth, "NoCredentials",
      "no credentials found. Tried, in order: --profile (not given); AWS_ACCESS_KEY_ID + "
      "AWS_SECRET_ACCESS_KEY; TIGRIS_STORAGE_ACCESS_KEY_ID + TIGRIS_STORAGE_SECRET_ACCESS_KEY; "
      "profile '" +
          profile + "' in " + credentials_path(env) + " and " + config_path(env) +
          "; the Tigris CLI's " + tigris_config_path(env) +
          ". Set one of these; for a local store: tfork serve --data DIR --env-file tfork.env & "
          "then, once tfork.env exists (written when it listens), . ./tfork.env");
}

}  // namespace tfork::cli
