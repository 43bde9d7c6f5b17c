// SPDX-License-Identifier: Apache-2.0
// The whole operations: header signing and query (presigned URL) signing.

#include "tfork/sigv4/signer.hpp"

#include <algorithm>

namespace tfork::sigv4 {
namespace {

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    return lower(x) == lower(y);
  });
}

std::string_view date8_of(std::string_view amz_date) {
  return amz_date.substr(0, 8);
}

void append_parameter(std::string& query, std::string_view name, std::string_view value) {
  if (!query.empty()) query.push_back('&');
  query += name;
  query.push_back('=');
  query += uri_encode(value, /*keep_slash=*/false);
}

}  // namespace

HeaderSignature sign_with_details(const Request& request, const Credentials& credentials,
                                  const SigningParams& params, Clock::time_point time) {
  const std::string date = amz_date(time);
  const std::string scope = credential_scope(date8_of(date), params.region, params.service);
  const bool sign_token = !credentials.session_token.empty() && !params.omit_session_token;

  // The headers this function adds replace any the caller left in the request.
  const auto replaced = [&](std::string_view name) {
    return equals_ignoring_case(name, "x-amz-date") ||
           equals_ignoring_case(name, "authorization") ||
           equals_ignoring_case(name, "x-amz-security-token") ||
           (params.add_content_sha256 && equals_ignoring_case(name, "x-amz-content-sha256"));
  };

  HeaderSignature result;
  result.headers.emplace_back("x-amz-date", date);
  if (params.add_content_sha256)
    result.headers.emplace_back("x-amz-content-sha256", request.payload_hash);
  if (sign_token) result.headers.emplace_back("x-amz-security-token", credentials.session_token);

  Request signed_request = request;
  std::erase_if(signed_request.headers,
                [&](const Header& header) { return replaced(header.first); });
  signed_request.headers.insert(signed_request.headers.end(), result.headers.begin(),
                                result.headers.end());

  result.signed_names = signed_header_names(signed_request.headers);
  result.canonical_request =
      canonical_request(signed_request, result.signed_names, params.uri_mode);
  result.string_to_sign = string_to_sign(date, scope, result.canonical_request);
  result.signature = signature(
      signing_key(credentials.secret_access_key, date8_of(date), params.region, params.service),
      result.string_to_sign);

  // aws-c-auth "omit_session_token" (post-sts-header-after): the token travels unsigned.
  if (!sign_token && !credentials.session_token.empty())
    result.headers.emplace_back("x-amz-security-token", credentials.session_token);
  result.headers.emplace_back(
      "authorization",
      authorization_value(credentials.access_key_id, scope, result.signed_names, result.signature));
  return result;
}

std::vector<Header> sign(const Request& request, const Credentials& credentials,
                         const SigningParams& params, Clock::time_point time) {
  return sign_with_details(request, credentials, params, time).headers;
}

QuerySignature presign_with_details(const Request& request, const Credentials& credentials,
                                    const SigningParams& params, Clock::time_point time,
                                    std::chrono::seconds expires) {
  const std::string date = amz_date(time);
  const std::string scope = credential_scope(date8_of(date), params.region, params.service);
  const bool sign_token = !credentials.session_token.empty() && !params.omit_session_token;

  QuerySignature result;
  result.signed_names = signed_header_names(request.headers);

  // S3 API Reference, "Authenticating Requests: Using Query Parameters": the X-Amz-*
  // parameters are part of the canonical query; X-Amz-Signature is appended afterwards.
  std::string query(request.query);
  append_parameter(query, "X-Amz-Algorithm", "AWS4-HMAC-SHA256");
  append_parameter(query, "X-Amz-Credential", credentials.access_key_id + "/" + scope);
  append_parameter(query, "X-Amz-Date", date);
  append_parameter(query, "X-Amz-Expires", std::to_string(expires.count()));
  append_parameter(query, "X-Amz-SignedHeaders", result.signed_names);
  if (sign_token) append_parameter(query, "X-Amz-Security-Token", credentials.session_token);

  Request signed_request = request;
  signed_request.query = query;
  if (signed_request.payload_hash.empty()) signed_request.payload_hash = unsigned_payload;

  result.canonical_request =
      canonical_request(signed_request, result.signed_names, params.uri_mode);
  result.string_to_sign = string_to_sign(date, scope, result.canonical_request);
  result.signature = signature(
      signing_key(credentials.secret_access_key, date8_of(date), params.region, params.service),
      result.string_to_sign);

  if (!sign_token && !credentials.session_token.empty())
    append_parameter(query, "X-Amz-Security-Token", credentials.session_token);
  append_parameter(query, "X-Amz-Signature", result.signature);
  result.query = std::move(query);
  return result;
}

std::string presign(const Request& request, const Credentials& credentials,
                    const SigningParams& params, Clock::time_point time,
                    std::chrono::seconds expires) {
  return presign_with_details(request, credentials, params, time, expires).query;
}

}  // namespace tfork::sigv4
