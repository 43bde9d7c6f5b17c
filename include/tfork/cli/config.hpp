// SPDX-License-Identifier: Apache-2.0
#pragma once
// Endpoint, region and credential resolution (cli.md §3): the chains users know from the
// AWS tools and the Tigris CLI, first match wins. Pure over an injected environment so tests
// run against a temporary HOME.

#include "tfork/sigv4/signer.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace tfork::cli {

// Reads an environment variable; nullopt when unset or empty.
using Environment = std::function<std::optional<std::string>(std::string_view)>;
Environment process_environment();

// What the command line said; empty / unset fields fall through to the chains.
struct ConfigOverrides {
  std::string endpoint_url;
  std::string iam_endpoint_url;
  std::string profile;
  std::string region;
  std::optional<bool> path_style;  // --path-style / --virtual-hosted
  std::string ca_bundle;
  int max_attempts = 0;  // 0: not given
};

struct Config {
  std::string endpoint;      // "https://t3.storage.dev" (no trailing slash)
  std::string iam_endpoint;  // "https://iam.storageapi.dev"
  std::string region;        // "auto"
  bool path_style = false;
  std::string ca_bundle;
  int max_attempts = 3;
  std::string profile;  // the profile whose file settings were used ("" when none)
};

// One section of an INI file (~/.aws/credentials or ~/.aws/config).
using IniSection = std::map<std::string, std::string>;
using IniFile = std::map<std::string, IniSection>;
IniFile parse_ini(std::string_view text);

// True for hosts of the real Tigris service (t3.storage.dev, *.storageapi.dev, ...).
bool is_tigris_host(std::string_view url);

// Resolves everything but credentials. Throws TforkError(usage) for a malformed URL.
Config resolve_config(const ConfigOverrides& overrides, const Environment& env);

struct ResolvedCredentials {
  sigv4::Credentials credentials;
  std::string source;  // e.g. "environment (AWS_ACCESS_KEY_ID)", for -v; never the secret
};

// The credential chain of cli.md §3. Throws TforkError(auth, "NoCredentials") with a
// paragraph naming everything that was tried when nothing matches.
ResolvedCredentials resolve_credentials(const ConfigOverrides& overrides, const Environment& env);

}  // namespace tfork::cli
