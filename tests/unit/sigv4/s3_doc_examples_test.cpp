// SPDX-License-Identifier: Apache-2.0
// The five worked examples of the AWS S3 API Reference (shared/sigv4/s3-doc-examples.json),
// signed in S3 mode.

#include "tfork/sigv4/signer.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "vector_files.hpp"
#include <iostream>

namespace tfork::sigv4::testing {
namespace {

std::vector<Header> headers_of(const nlohmann::json& pairs) {
  std::vector<Header> headers;
  for (const auto& pair : pairs)
    headers.emplace_back(pair.at(0), pair.at(1));
  return headers;
}

// The wire query: raw_query when the example gives one, else the pairs encoded.
std::string wire_query_of(const nlohmann::json& example) {
  if (example.contains("raw_query")) return example.at("raw_query").get<std::string>();
  std::string query;
  for (const auto& pair : example.at("query")) {
    if (!query.empty()) query.push_back('&');
    query += uri_encode(pair.at(0).get<std::string>(), false) + "=" +
             uri_encode(pair.at(1).get<std::string>(), false);
  }
  return query;
}

}  // namespace

TEST_CASE("s3-doc-examples.json: every example", "[sigv4][vectors]") {
  const auto file = require_vectors("s3-doc-examples.json");
  const auto document = nlohmann::json::parse(read_text(file));
  const auto& examples = document.at("examples");

  int passed = 0;
  for (const auto& example : examples) {
    INFO("example " << example.at("id").get<std::string>());
    const auto& expected = example.at("expected");
    const Credentials credentials{example.at("access_key_id"), example.at("secret_access_key"), ""};
    const SigningParams params{.region = example.at("region"),
                               .service = example.at("service"),
                               .uri_mode = UriMode::s3,
                               .add_content_sha256 = true,
                               .omit_session_token = false};
    const std::string date = example.at("amz_date");
    const Clock::time_point time = parse_utc(date);
    const Request request{.method = example.at("method"),
                          .path = example.at("path"),
                          .query = wire_query_of(example),
                          .headers = headers_of(example.at("headers")),
                          .payload_hash = example.at("payload_sha256")};
    bool ok = false;

    if (example.at("auth_type") == "header") {
      // Step by step, with the headers as the document shows them.
      const std::string names = signed_header_names(request.headers);
      const std::string creq = canonical_request(request, names, UriMode::s3);
      const std::string scope = credential_scope(date.substr(0, 8), params.region, params.service);
      const std::string sts = string_to_sign(date, scope, creq);
      const std::string sig =
          signature(signing_key(credentials.secret_access_key, date.substr(0, 8), params.region,
                                params.service),
                    sts);
      CHECK(names == expected.at("signed_headers"));
      CHECK(creq == expected.at("canonical_request"));
      CHECK(sts == expected.at("string_to_sign"));
      CHECK(sig == expected.at("signature"));

      // The document's own Authorization value (',' without spaces) parses to the same parts.
      const auto parsed = parse_authorization(expected.at("authorization").get<std::string>());
      REQUIRE(parsed.has_value());
      CHECK(parsed->access_key_id == credentials.access_key_id);
      CHECK(parsed->signed_headers == names);
      CHECK(parsed->signature == sig);

      // And through sign(), which adds x-amz-date and x-amz-content-sha256 itself.
      Request bare = request;
      std::erase_if(bare.headers, [](const Header& header) {
        return header.first == "x-amz-date" || header.first == "x-amz-content-sha256";
      });
      const HeaderSignature signed_result = sign_with_details(bare, credentials, params, time);
      CHECK(signed_result.canonical_request == expected.at("canonical_request"));
      CHECK(signed_result.signature == expected.at("signature"));
      ok = names == expected.at("signed_headers") && creq == expected.at("canonical_request") &&
           sts == expected.at("string_to_sign") && sig == expected.at("signature") &&
           signed_result.signature == sig;
    } else {
      const auto& presign_input = example.at("presign");
      const QuerySignature actual =
          presign_with_details(request, credentials, params, time,
                               std::chrono::seconds(presign_input.at("expires").get<long>()));
      const std::string url = expected.at("url");
      const std::string wanted_query = url.substr(url.find('?') + 1);
      CHECK(actual.signed_names == presign_input.at("signed_headers"));
      CHECK(actual.canonical_request == expected.at("canonical_request"));
      CHECK(actual.string_to_sign == expected.at("string_to_sign"));
      CHECK(actual.signature == expected.at("signature"));
      CHECK(actual.query == wanted_query);
      ok = actual.canonical_request == expected.at("canonical_request") &&
           actual.string_to_sign == expected.at("string_to_sign") &&
           actual.signature == expected.at("signature") && actual.query == wanted_query;
    }
    if (ok) ++passed;
  }
  std::cout << "[sigv4 vectors] s3-doc-examples.json: " << passed << "/" << examples.size()
            << " examples pass\n";
  CHECK(examples.size() == 5);
  CHECK(passed == static_cast<int>(examples.size()));
}

}  // namespace tfork::sigv4::testing
