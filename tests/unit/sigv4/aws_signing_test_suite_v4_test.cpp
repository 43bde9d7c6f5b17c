// SPDX-License-Identifier: Apache-2.0
// aws-c-auth's newer suite (shared/sigv4/aws-signing-test-suite-v4/, 38 cases), each signed
// twice: in headers and in the query (presigned URL).

#include "tfork/sigv4/signer.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "raw_request.hpp"
#include "vector_files.hpp"
#include <algorithm>
#include <iostream>
#include <utility>
#include <vector>

namespace tfork::sigv4::testing {
namespace {

struct CaseContext {
  Credentials credentials;
  SigningParams params;
  Clock::time_point time;
  std::chrono::seconds expires{};
};

CaseContext read_context(const std::filesystem::path& file) {
  const auto json = nlohmann::json::parse(read_text(file));
  const auto& credentials = json.at("credentials");
  CaseContext context;
  context.credentials.access_key_id = credentials.at("access_key_id").get<std::string>();
  context.credentials.secret_access_key = credentials.at("secret_access_key").get<std::string>();
  context.credentials.session_token = credentials.value("token", std::string());
  context.params.region = json.at("region").get<std::string>();
  context.params.service = json.at("service").get<std::string>();
  // normalize:false is the S3 rule set (the *-unnormalized cases); sign_body is S3's
  // x-amz-content-sha256 (shared/sigv4/README.md, "Which context flags matter for S3").
  context.params.uri_mode = json.at("normalize").get<bool>() ? UriMode::generic : UriMode::s3;
  context.params.add_content_sha256 = json.at("sign_body").get<bool>();
  context.params.omit_session_token = json.value("omit_session_token", false);
  context.time = parse_utc(json.at("timestamp").get<std::string>());
  context.expires = std::chrono::seconds(json.at("expiration_in_seconds").get<long>());
  return context;
}

// The "Authorization:" line of a signed-request file.
std::string authorization_line(std::string_view signed_request) {
  constexpr std::string_view prefix = "\nAuthorization:";
  const std::size_t at = signed_request.find(prefix);
  if (at == std::string_view::npos) return {};
  const std::size_t start = at + prefix.size();
  return std::string(signed_request.substr(start, signed_request.find('\n', start) - start));
}

// A wire query as a sorted list of raw "name=value" parameters (order on the wire is free).
std::vector<std::string> sorted_parameters(std::string_view query) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= query.size()) {
    const std::size_t end = std::min(query.find('&', start), query.size());
    if (end > start) out.emplace_back(query.substr(start, end - start));
    start = end + 1;
  }
  std::ranges::sort(out);
  return out;
}

}  // namespace

TEST_CASE("aws-signing-test-suite-v4: every case, header and query signing", "[sigv4][vectors]") {
  const auto suite = require_vectors("aws-signing-test-suite-v4");
  std::vector<std::filesystem::path> case_dirs;
  for (const auto& entry : std::filesystem::directory_iterator(suite))
    if (entry.is_directory() && std::filesystem::exists(entry.path() / "context.json"))
      case_dirs.push_back(entry.path());
  std::ranges::sort(case_dirs);

  int header_passed = 0, query_passed = 0;
  for (const auto& dir : case_dirs) {
    const std::string name = dir.filename().string();
    INFO("case " << name);
    const auto expected = [&](std::string_view file) { return read_text(dir / file); };
    const CaseContext context = read_context(dir / "context.json");
    const Request request = to_request(parse_raw_request(expected("request.txt")));

    {
      const HeaderSignature actual =
          sign_with_details(request, context.credentials, context.params, context.time);
      const auto wanted_authorization = authorization_line(expected("header-signed-request.txt"));
      CHECK(actual.canonical_request == expected("header-canonical-request.txt"));
      CHECK(actual.string_to_sign == expected("header-string-to-sign.txt"));
      CHECK(actual.signature == expected("header-signature.txt"));
      CHECK(actual.headers.back().second == wanted_authorization);
      if (actual.canonical_request == expected("header-canonical-request.txt") &&
          actual.string_to_sign == expected("header-string-to-sign.txt") &&
          actual.signature == expected("header-signature.txt") &&
          actual.headers.back().second == wanted_authorization)
        ++header_passed;
    }
    {
      const QuerySignature actual = presign_with_details(
          request, context.credentials, context.params, context.time, context.expires);
      // The signed request line is "METHOD /path?query HTTP/1.1"; compare its parameters.
      const RawRequest signed_request = parse_raw_request(expected("query-signed-request.txt"));
      const bool same_query =
          sorted_parameters(actual.query) == sorted_parameters(signed_request.query);
      CHECK(actual.canonical_request == expected("query-canonical-request.txt"));
      CHECK(actual.string_to_sign == expected("query-string-to-sign.txt"));
      CHECK(actual.signature == expected("query-signature.txt"));
      CHECK(query_parameter(actual.query, "X-Amz-Signature") == actual.signature);
      CHECK(same_query);
      if (actual.canonical_request == expected("query-canonical-request.txt") &&
          actual.string_to_sign == expected("query-string-to-sign.txt") &&
          actual.signature == expected("query-signature.txt") && same_query)
        ++query_passed;
    }
  }

  const auto cases = static_cast<int>(case_dirs.size());
  std::cout << "[sigv4 vectors] aws-signing-test-suite-v4: header signing " << header_passed << "/"
            << cases << ", query signing " << query_passed << "/" << cases << " cases pass\n";
  CHECK(cases == 38);
  CHECK(header_passed == cases);
  CHECK(query_passed == cases);
}

}  // namespace tfork::sigv4::testing
