// SPDX-License-Identifier: Apache-2.0
// The endpoint, region, addressing and credential chains of cli.md §3, against a temporary
// HOME and an injected environment.
#include "tfork/cli/config.hpp"

#include "tfork/core/error.hpp"

#include <catch2/catch.hpp>

#include "test_env.hpp"

using tfork::ErrorKind;
using tfork::TforkError;
using tfork::cli::ConfigOverrides;
using tfork::cli::resolve_config;
using tfork::cli::resolve_credentials;
using tfork::testing::TempHome;

namespace {

ErrorKind kind_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const TforkError& error) {
    return error.error().kind;
  }
  FAIL("no TforkError was thrown");
  return ErrorKind::other;
}

std::string message_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const TforkError& error) {
    return error.error().message;
  }
  FAIL("no TforkError was thrown");
  return {};
}

}  // namespace

TEST_CASE(
    "S3 endpoint chain: flag > AWS_ENDPOINT_URL_S3 > AWS_ENDPOINT_URL > "
    "TIGRIS_STORAGE_ENDPOINT > profile endpoint_url_s3 > endpoint_url > default",
    "[config][endpoint]") {
  TempHome home;
  ConfigOverrides flags;
  auto endpoint = [&] { return resolve_config(flags, home.env()).endpoint; };

  CHECK(endpoint() == "https://t3.storage.dev");

  home.write(".aws/config", "[default]\nendpoint_url = http://profile-generic:1\n");
  CHECK(endpoint() == "http://profile-generic:1");

  home.write(".aws/config",
             "[default]\nendpoint_url = http://profile-generic:1\n"
             "endpoint_url_s3 = http://profile-s3:2\n");
  CHECK(endpoint() == "http://profile-s3:2");

  home.vars["TIGRIS_STORAGE_ENDPOINT"] = "http://tigris-env:3";
  CHECK(endpoint() == "http://tigris-env:3");

  home.vars["AWS_ENDPOINT_URL"] = "http://aws-generic:4";
  CHECK(endpoint() == "http://aws-generic:4");

  home.vars["AWS_ENDPOINT_URL_S3"] = "http://aws-s3:5";
  CHECK(endpoint() == "http://aws-s3:5");

  flags.endpoint_url = "http://flag:6/";
  CHECK(endpoint() == "http://flag:6");  // trailing slash dropped
}

TEST_CASE("an empty environment variable counts as unset", "[config][endpoint]") {
  TempHome home;
  home.vars["AWS_ENDPOINT_URL_S3"] = "";
  home.vars["AWS_ENDPOINT_URL"] = "http://aws-generic:4";
  CHECK(resolve_config({}, home.env()).endpoint == "http://aws-generic:4");
}

TEST_CASE(
    "the profile's endpoint comes from [profile x] in config, selected by AWS_PROFILE or "
    "--profile",
    "[config][endpoint][profile]") {
  TempHome home;
  home.write(".aws/config",
             "[default]\nendpoint_url = http://default:1\n\n"
             "[profile work]\nendpoint_url = http://work:2\nregion = eu-west-1\n\n"
             "[other]\nendpoint_url = http://not-a-profile-section:3\n");
  CHECK(resolve_config({}, home.env()).endpoint == "http://default:1");

  home.vars["AWS_PROFILE"] = "work";
  auto config = resolve_config({}, home.env());
  CHECK(config.endpoint == "http://work:2");
  CHECK(config.region == "eu-west-1");
  CHECK(config.profile == "work");

  ConfigOverrides flags;
  flags.profile = "default";
  CHECK(resolve_config(flags, home.env()).endpoint == "http://default:1");
}

TEST_CASE("AWS_CONFIG_FILE replaces ~/.aws/config", "[config][files]") {
  TempHome home;
  home.write(".aws/config", "[default]\nendpoint_url = http://home-file:1\n");
  home.vars["AWS_CONFIG_FILE"] =
      home.write("elsewhere/config", "[default]\nendpoint_url = http://env-file:2\n");
  CHECK(resolve_config({}, home.env()).endpoint == "http://env-file:2");
}

TEST_CASE("IAM endpoint chain", "[config][iam]") {
  TempHome home;
  ConfigOverrides flags;
  auto iam = [&] { return resolve_config(flags, home.env()).iam_endpoint; };

  SECTION("default with the default S3 endpoint") {
    CHECK(iam() == "https://iam.storageapi.dev");
  }
  SECTION("a Tigris S3 endpoint keeps the Tigris IAM default") {
    flags.endpoint_url = "https://fly.storage.tigris.dev";
    CHECK(iam() == "https://iam.storageapi.dev");
  }
  SECTION("the S3 endpoint when it is not a Tigris host (the local store serves both)") {
    flags.endpoint_url = "http://127.0.0.1:9000";
    CHECK(iam() == "http://127.0.0.1:9000");
    home.vars["AWS_ENDPOINT_URL"] = "http://localhost:1234";
    flags.endpoint_url.clear();
    CHECK(iam() == "http://localhost:1234");
  }
  SECTION("profile endpoint_url_iam > S3 fallback") {
    flags.endpoint_url = "http://127.0.0.1:9000";
    home.write(".aws/config", "[default]\nendpoint_url_iam = http://profile-iam:1\n");
    CHECK(iam() == "http://profile-iam:1");
    home.vars["TIGRIS_IAM_ENDPOINT"] = "http://tigris-iam:2";
    CHECK(iam() == "http://tigris-iam:2");
    home.vars["AWS_ENDPOINT_URL_IAM"] = "http://aws-iam:3";
    CHECK(iam() == "http://aws-iam:3");
    flags.iam_endpoint_url = "http://flag-iam:4";
    CHECK(iam() == "http://flag-iam:4");
  }
}

TEST_CASE("is_tigris_host", "[config]") {
  using tfork::cli::is_tigris_host;
  CHECK(is_tigris_host("https://t3.storage.dev"));
  CHECK(is_tigris_host("https://bucket.t3.storage.dev/key"));
  CHECK(is_tigris_host("https://iam.storageapi.dev"));
  CHECK(is_tigris_host("https://fly.storage.tigris.dev:443"));
  CHECK_FALSE(is_tigris_host("http://127.0.0.1:9000"));
  CHECK_FALSE(is_tigris_host("http://localhost:9000"));
  CHECK_FALSE(is_tigris_host("https://notstorage.dev"));
  CHECK_FALSE(is_tigris_host("https://storage.dev.example.com"));
}

TEST_CASE("addressing style defaults: virtual-hosted for Tigris, path style otherwise",
          "[config][addressing]") {
  TempHome home;
  ConfigOverrides flags;
  CHECK_FALSE(resolve_config(flags, home.env()).path_style);
  flags.endpoint_url = "http://127.0.0.1:9000";
  CHECK(resolve_config(flags, home.env()).path_style);

  SECTION("--virtual-hosted / --path-style win") {
    flags.path_style = false;
    CHECK_FALSE(resolve_config(flags, home.env()).path_style);
    flags.endpoint_url = "https://t3.storage.dev";
    flags.path_style = true;
    CHECK(resolve_config(flags, home.env()).path_style);
  }
  SECTION("profile addressing_style") {
    flags.endpoint_url = "https://t3.storage.dev";
    home.write(".aws/config", "[default]\ns3 =\n  addressing_style = path\n");
    CHECK(resolve_config(flags, home.env()).path_style);
  }
  SECTION("TIGRIS_FORCE_PATH_STYLE") {
    flags.endpoint_url = "https://t3.storage.dev";
    home.vars["TIGRIS_FORCE_PATH_STYLE"] = "true";
    CHECK(resolve_config(flags, home.env()).path_style);
    home.vars["TIGRIS_FORCE_PATH_STYLE"] = "0";
    CHECK_FALSE(resolve_config(flags, home.env()).path_style);
  }
}

TEST_CASE("region: flag > AWS_REGION > AWS_DEFAULT_REGION > profile > auto", "[config]") {
  TempHome home;
  ConfigOverrides flags;
  flags.endpoint_url = "http://127.0.0.1:9000";  // not Tigris: the AWS chain applies
  auto region = [&] { return resolve_config(flags, home.env()).region; };
  CHECK(region() == "auto");
  home.write(".aws/config", "[default]\nregion = profile-region\n");
  CHECK(region() == "profile-region");
  home.vars["AWS_DEFAULT_REGION"] = "default-region";
  CHECK(region() == "default-region");
  home.vars["AWS_REGION"] = "aws-region";
  CHECK(region() == "aws-region");
  flags.region = "flag-region";
  CHECK(region() == "flag-region");
}

TEST_CASE("max attempts and CA bundle", "[config]") {
  TempHome home;
  ConfigOverrides flags;
  CHECK(resolve_config(flags, home.env()).max_attempts == 3);
  home.vars["AWS_MAX_ATTEMPTS"] = "5";
  CHECK(resolve_config(flags, home.env()).max_attempts == 5);
  flags.max_attempts = 7;
  CHECK(resolve_config(flags, home.env()).max_attempts == 7);
  flags.max_attempts = 0;
  home.vars["AWS_MAX_ATTEMPTS"] = "many";
  CHECK(kind_of([&] { resolve_config(flags, home.env()); }) == ErrorKind::usage);

  home.vars.erase("AWS_MAX_ATTEMPTS");
  home.vars["AWS_CA_BUNDLE"] = "/etc/env-ca.pem";
  CHECK(resolve_config(flags, home.env()).ca_bundle == "/etc/env-ca.pem");
  flags.ca_bundle = "/etc/flag-ca.pem";
  CHECK(resolve_config(flags, home.env()).ca_bundle == "/etc/flag-ca.pem");
}

TEST_CASE("a malformed endpoint URL is a usage error", "[config][endpoint]") {
  TempHome home;
  ConfigOverrides flags;
  flags.endpoint_url = "127.0.0.1:9000";
  CHECK(kind_of([&] { resolve_config(flags, home.env()); }) == ErrorKind::usage);
  CHECK_THAT(message_of([&] { resolve_config(flags, home.env()); }),
             Catch::Contains("http://") && Catch::Contains("127.0.0.1:9000"));

  flags.endpoint_url.clear();
  home.vars["AWS_ENDPOINT_URL"] = "ftp://example.com";
  CHECK(kind_of([&] { resolve_config(flags, home.env()); }) == ErrorKind::usage);

  home.vars.erase("AWS_ENDPOINT_URL");
  flags.iam_endpoint_url = "iam.example.com";
  CHECK(kind_of([&] { resolve_config(flags, home.env()); }) == ErrorKind::usage);

  flags.iam_endpoint_url = "http://";
  CHECK(kind_of([&] { resolve_config(flags, home.env()); }) == ErrorKind::usage);
}

// ---- credentials

TEST_CASE("credentials: --profile > AWS_* > TIGRIS_STORAGE_* > AWS_PROFILE / default files",
          "[credentials]") {
  TempHome home;
  home.write(".aws/credentials",
             "[default]\naws_access_key_id = DEFAULTID\naws_secret_access_key = defaultsecret\n\n"
             "[named]\naws_access_key_id = NAMEDID\naws_secret_access_key = namedsecret\n\n"
             "[picked]\naws_access_key_id = PICKEDID\naws_secret_access_key = pickedsecret\n");
  ConfigOverrides flags;
  auto id = [&] { return resolve_credentials(flags, home.env()).credentials.access_key_id; };

  CHECK(id() == "DEFAULTID");

  home.vars["AWS_PROFILE"] = "named";
  CHECK(id() == "NAMEDID");

  home.vars["TIGRIS_STORAGE_ACCESS_KEY_ID"] = "TIGRISID";
  home.vars["TIGRIS_STORAGE_SECRET_ACCESS_KEY"] = "tigrissecret";
  CHECK(id() == "TIGRISID");
  CHECK(resolve_credentials(flags, home.env()).credentials.secret_access_key == "tigrissecret");

  home.vars["AWS_ACCESS_KEY_ID"] = "AWSID";
  home.vars["AWS_SECRET_ACCESS_KEY"] = "awssecret";
  CHECK(id() == "AWSID");
  CHECK(resolve_credentials(flags, home.env()).source == "environment (AWS_ACCESS_KEY_ID)");

  flags.profile = "picked";
  CHECK(id() == "PICKEDID");
  CHECK(resolve_credentials(flags, home.env()).credentials.secret_access_key == "pickedsecret");
}

TEST_CASE("an id without a secret does not count", "[credentials]") {
  TempHome home;
  home.vars["AWS_ACCESS_KEY_ID"] = "AWSID";
  home.vars["TIGRIS_STORAGE_ACCESS_KEY_ID"] = "TIGRISID";
  home.vars["TIGRIS_STORAGE_SECRET_ACCESS_KEY"] = "tigrissecret";
  CHECK(resolve_credentials({}, home.env()).credentials.access_key_id == "TIGRISID");
}

TEST_CASE("AWS_SESSION_TOKEN goes with the AWS_* pair", "[credentials]") {
  TempHome home;
  home.vars["AWS_ACCESS_KEY_ID"] = "AWSID";
  home.vars["AWS_SECRET_ACCESS_KEY"] = "awssecret";
  CHECK(resolve_credentials({}, home.env()).credentials.session_token.empty());
  home.vars["AWS_SESSION_TOKEN"] = "token-123";
  CHECK(resolve_credentials({}, home.env()).credentials.session_token == "token-123");
}

TEST_CASE("aws_session_token in the credentials file", "[credentials][files]") {
  TempHome home;
  home.write(".aws/credentials",
             "[default]\naws_access_key_id = ID\naws_secret_access_key = s\n"
             "aws_session_token = file-token\n");
  CHECK(resolve_credentials({}, home.env()).credentials.session_token == "file-token");
}

TEST_CASE("AWS_SHARED_CREDENTIALS_FILE replaces ~/.aws/credentials", "[credentials][files]") {
  TempHome home;
  home.write(".aws/credentials",
             "[default]\naws_access_key_id = HOMEID\naws_secret_access_key = s\n");
  home.vars["AWS_SHARED_CREDENTIALS_FILE"] = home.write(
      "other/creds", "[default]\naws_access_key_id = ENVFILEID\naws_secret_access_key = s\n");
  CHECK(resolve_credentials({}, home.env()).credentials.access_key_id == "ENVFILEID");
}

TEST_CASE("keys in the config file: [profile x] and [default]", "[credentials][files]") {
  TempHome home;
  home.write(".aws/config",
             "[default]\naws_access_key_id = CFGDEFAULT\naws_secret_access_key = s1\n\n"
             "[profile dev]\naws_access_key_id = CFGDEV\naws_secret_access_key = s2\n\n"
             "# comment\n"
             "[profile dev2]\naws_access_key_id = CFGDEV2\naws_secret_access_key = s3\n");
  CHECK(resolve_credentials({}, home.env()).credentials.access_key_id == "CFGDEFAULT");
  ConfigOverrides flags;
  flags.profile = "dev";
  CHECK(resolve_credentials(flags, home.env()).credentials.access_key_id == "CFGDEV");

  SECTION("the credentials file wins over the config file for the same profile") {
    home.write(".aws/credentials",
               "[dev]\naws_access_key_id = CREDDEV\naws_secret_access_key = s\n");
    CHECK(resolve_credentials(flags, home.env()).credentials.access_key_id == "CREDDEV");
  }
  SECTION("AWS_CONFIG_FILE") {
    home.vars["AWS_CONFIG_FILE"] = home.write(
        "cfg2", "[profile dev]\naws_access_key_id = OTHERCFG\naws_secret_access_key = s\n");
    CHECK(resolve_credentials(flags, home.env()).credentials.access_key_id == "OTHERCFG");
  }
}

TEST_CASE("credential_process", "[credentials][process]") {
  TempHome home;
  SECTION("a script printing the AWS JSON document") {
    const auto script = home.write(
        "bin/creds.sh",
        "#!/bin/sh\n"
        "printf '%s' '{\"Version\": 1, \"AccessKeyId\": \"PROCID\", \"SecretAccessKey\": "
        "\"procsecret\", \"SessionToken\": \"proctoken\"}'\n",
        true);
    home.write(".aws/config", "[profile proc]\ncredential_process = " + script + "\n");
    ConfigOverrides flags;
    flags.profile = "proc";
    const auto resolved = resolve_credentials(flags, home.env());
    CHECK(resolved.credentials.access_key_id == "PROCID");
    CHECK(resolved.credentials.secret_access_key == "procsecret");
    CHECK(resolved.credentials.session_token == "proctoken");
    CHECK_THAT(resolved.source, Catch::Contains("credential_process"));
    CHECK_THAT(resolved.source, !Catch::Contains("procsecret"));

    SECTION("also for the default profile, after the environment") {
      home.write(".aws/config", "[default]\ncredential_process = " + script + "\n");
      CHECK(resolve_credentials({}, home.env()).credentials.access_key_id == "PROCID");
    }
  }
  SECTION("static keys win over credential_process in the same profile") {
    home.write(".aws/config",
               "[default]\naws_access_key_id = STATIC\naws_secret_access_key = s\n"
               "credential_process = /bin/false\n");
    CHECK(resolve_credentials({}, home.env()).credentials.access_key_id == "STATIC");
  }
  SECTION("a failing process is an auth error naming the profile") {
    const auto script = home.write("bin/fail.sh", "#!/bin/sh\nexit 3\n", true);
    home.write(".aws/config", "[default]\ncredential_process = " + script + "\n");
    CHECK(kind_of([&] { resolve_credentials({}, home.env()); }) == ErrorKind::auth);
    const auto message = message_of([&] { resolve_credentials({}, home.env()); });
    CHECK_THAT(message, Catch::Contains("default") && Catch::Contains("status 3"));
  }
  SECTION("output that is not the JSON document is an auth error") {
    const auto script = home.write("bin/bad.sh", "#!/bin/sh\necho not json\n", true);
    home.write(".aws/config", "[default]\ncredential_process = " + script + "\n");
    CHECK(kind_of([&] { resolve_credentials({}, home.env()); }) == ErrorKind::auth);
    CHECK_THAT(message_of([&] { resolve_credentials({}, home.env()); }),
               Catch::Contains("AccessKeyId"));
  }
}

TEST_CASE("no credentials: one paragraph naming everything tried", "[credentials]") {
  TempHome home;
  CHECK(kind_of([&] { resolve_credentials({}, home.env()); }) == ErrorKind::auth);
  const auto message = message_of([&] { resolve_credentials({}, home.env()); });
  CHECK_THAT(message, Catch::Contains("--profile"));
  CHECK_THAT(message, Catch::Contains("AWS_ACCESS_KEY_ID"));
  CHECK_THAT(message, Catch::Contains("TIGRIS_STORAGE_ACCESS_KEY_ID"));
  CHECK_THAT(message, Catch::Contains("profile 'default'"));
  CHECK_THAT(message, Catch::Contains(home.dir().string() + "/.aws/credentials"));
  CHECK_THAT(message, Catch::Contains(home.dir().string() + "/.aws/config"));
  CHECK(message.find('\n') == std::string::npos);

  SECTION("a named but missing --profile says which files it read") {
    ConfigOverrides flags;
    flags.profile = "ghost";
    const auto named = message_of([&] { resolve_credentials(flags, home.env()); });
    CHECK_THAT(named, Catch::Contains("'ghost'") && Catch::Contains(".aws/credentials"));
    CHECK(kind_of([&] { resolve_credentials(flags, home.env()); }) == ErrorKind::auth);
  }
  SECTION("the AWS_PROFILE name appears") {
    home.vars["AWS_PROFILE"] = "ci";
    CHECK_THAT(message_of([&] { resolve_credentials({}, home.env()); }),
               Catch::Contains("profile 'ci'"));
  }
}

TEST_CASE("parse_ini", "[config][ini]") {
  const auto ini = tfork::cli::parse_ini(
      "# comment\n; another\nignored = before any section\n[default]\n  key = value with spaces  "
      "\r\nempty =\n[ profile x ]\na=b=c\n");
  REQUIRE(ini.count("default") == 1);
  CHECK(ini.at("default").at("key") == "value with spaces");
  CHECK(ini.at("default").at("empty").empty());
  REQUIRE(ini.count("profile x") == 1);
  CHECK(ini.at("profile x").at("a") == "b=c");
  CHECK(ini.size() == 2);
}

TEST_CASE("the Tigris CLI's ~/.tigris/config.json: last in the chain, temporary before saved",
          "[config][credentials][tigris-cli]") {
  TempHome home;
  ConfigOverrides flags;
  auto key = [&] { return resolve_credentials(flags, home.env()).credentials.access_key_id; };

  CHECK(message_of([&] { key(); }).find(".tigris/config.json") != std::string::npos);

  // The version 2 layout `tigris configure` writes.
  home.write(".tigris/config.json", R"({"version": 2, "credentials": {"saved": {
      "accessKeyId": "tid_saved", "secretAccessKey": "tsec_saved",
      "endpoint": "http://saved-endpoint:7"}}})");
  CHECK(key() == "tid_saved");
  CHECK(resolve_credentials(flags, home.env()).credentials.secret_access_key == "tsec_saved");
  CHECK(resolve_credentials(flags, home.env()).source.find("saved") != std::string::npos);
  CHECK(resolve_config(flags, home.env()).endpoint == "http://saved-endpoint:7");

  // `tigris login credentials` adds a temporary session, which wins while it lasts.
  home.write(".tigris/config.json", R"({"version": 2, "activeMethod": "credentials",
      "credentials": {
        "saved": {"accessKeyId": "tid_saved", "secretAccessKey": "tsec_saved",
                  "endpoint": "http://saved-endpoint:7"},
        "temporary": {"accessKeyId": "tid_temp", "secretAccessKey": "tsec_temp",
                      "endpoint": "http://temp-endpoint:8"}}})");
  CHECK(key() == "tid_temp");
  CHECK(resolve_config(flags, home.env()).endpoint == "http://temp-endpoint:8");

  // The older layout: one credentials object.
  home.write(".tigris/config.json",
             R"({"credentials": {"accessKeyId": "tid_old", "secretAccessKey": "tsec_old",
                 "endpoint": "https://t3.storage.dev"}})");
  CHECK(key() == "tid_old");

  // Every other source comes first: a profile, then the environment.
  home.write(".aws/credentials",
             "[default]\naws_access_key_id = AKPROFILE\naws_secret_access_key = s\n");
  CHECK(key() == "AKPROFILE");
  home.vars["TIGRIS_STORAGE_ACCESS_KEY_ID"] = "tid_env";
  home.vars["TIGRIS_STORAGE_SECRET_ACCESS_KEY"] = "tsec_env";
  CHECK(key() == "tid_env");
  home.vars["AWS_ACCESS_KEY_ID"] = "AKENV";
  home.vars["AWS_SECRET_ACCESS_KEY"] = "s";
  CHECK(key() == "AKENV");

  // Any endpoint setting beats the file's endpoint.
  home.vars["AWS_ENDPOINT_URL"] = "http://env-endpoint:9";
  CHECK(resolve_config(flags, home.env()).endpoint == "http://env-endpoint:9");
}

TEST_CASE("a malformed ~/.tigris/config.json counts as no file",
          "[config][credentials][tigris-cli]") {
  TempHome home;
  ConfigOverrides flags;
  for (const char* text :
       {"not json", "[]", R"({"version": 2})", R"({"version": 2, "credentials": []})",
        R"({"version": 2, "credentials": {"saved": {"accessKeyId": "tid_only"}}})",
        R"({"version": 2, "credentials": {"saved": {"accessKeyId": 1, "secretAccessKey": 2}}})"}) {
    INFO(text);
    home.write(".tigris/config.json", text);
    CHECK(kind_of([&] { resolve_credentials(flags, home.env()); }) == ErrorKind::auth);
    CHECK(resolve_config(flags, home.env()).endpoint == "https://t3.storage.dev");
  }
}
