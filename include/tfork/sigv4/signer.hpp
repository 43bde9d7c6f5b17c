// SPDX-License-Identifier: Apache-2.0
#pragma once
// AWS Signature Version 4, as pure functions: no clock, no environment, no I/O, no logging.
// Each step of the algorithm is its own function so tests can check every intermediate
// against the vectors in ../shared/sigv4/. The local store (tfork serve) verifies requests
// with the same functions.

#include <chrono>
#include <expected>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfork::sigv4 {

using Header = std::pair<std::string, std::string>;
using Clock = std::chrono::system_clock;

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty when none
};

// S3 rules: the wire path is decoded and re-encoded exactly once per segment, never
// normalised ("//", ".", ".." kept). Generic rules (the AWS suites' non-S3 service): dot
// segments and repeated slashes are normalised, and each segment is encoded twice.
enum class UriMode { s3, generic };

// A request as it is (or will be) sent on the wire.
struct Request {
  std::string method;
  std::string path;             // percent-encoded wire path, no query, e.g. "/b/a%20b"
  std::string query;            // wire query without '?', e.g. "list-type=2&prefix=a%2F"
  std::vector<Header> headers;  // as sent, names in any case; must contain "host"
  std::string payload_hash;     // hex SHA-256 of the body, "UNSIGNED-PAYLOAD" or STREAMING-*
};

struct SigningParams {
  std::string region = "auto";
  std::string service = "s3";
  UriMode uri_mode = UriMode::s3;
  // S3 requires x-amz-content-sha256 and signs it; the generic AWS suites do not send it.
  bool add_content_sha256 = true;
  // Sign without the session token and add it afterwards (aws-c-auth "omit_session_token").
  bool omit_session_token = false;
};

// Well-known x-amz-content-sha256 values (S3 API Reference, "Signature Calculations for the
// Authorization Header").
inline constexpr std::string_view empty_payload_sha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
inline constexpr std::string_view unsigned_payload = "UNSIGNED-PAYLOAD";
inline constexpr std::string_view streaming_payload = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD";

// ---- the steps -----------------------------------------------------------------------

std::string uri_encode(std::string_view bytes, bool keep_slash);  // RFC 3986 unreserved kept
std::string uri_decode(std::string_view text);                    // "%XY" decoded; '+' kept

std::string canonical_uri(std::string_view wire_path, UriMode mode);
std::string canonical_query(std::string_view wire_query);

// Lowercased, sorted, ';'-joined names of the headers to sign (all given headers).
std::string signed_header_names(const std::vector<Header>& headers);
// "name:value\n" per signed name in sorted order: values trimmed, inner runs of spaces
// collapsed, several values of one name joined by ',' in the order they appear.
std::string canonical_headers(const std::vector<Header>& headers, std::string_view signed_names);

std::string canonical_request(const Request& request, std::string_view signed_names, UriMode mode);

std::string amz_date(Clock::time_point time);  // "20150830T123600Z"
std::string credential_scope(
    std::string_view date8, std::string_view region,
    std::string_view service);  // "20150830/us-east-1/service/aws4_request"
std::string string_to_sign(std::string_view amz_date, std::string_view scope,
                           std::string_view canonical_request);
std::string signing_key(std::string_view secret, std::string_view date8, std::string_view region,
                        std::string_view service);                                     // raw bytes
std::string signature(std::string_view signing_key, std::string_view string_to_sign);  // hex
// "AWS4-HMAC-SHA256 Credential=<key>/<scope>, SignedHeaders=<names>, Signature=<hex>"
std::string authorization_value(std::string_view access_key_id, std::string_view scope,
                                std::string_view signed_names, std::string_view signature_hex);

// ---- whole operations ----------------------------------------------------------------

// Header signing. Returns the headers to add to the request, in this order:
// x-amz-date, x-amz-content-sha256 (when params.add_content_sha256), x-amz-security-token
// (when a session token is set), authorization. Names are lowercase. Headers of these names
// already in request.headers are replaced: they are left out of the signed set, and the
// caller should drop them from the request.
std::vector<Header> sign(const Request& request, const Credentials& credentials,
                         const SigningParams& params, Clock::time_point time);

// sign() with its intermediates: S3 echoes the canonical request and string to sign in
// SignatureDoesNotMatch, and the tests compare each step with the vectors.
struct HeaderSignature {
  std::vector<Header> headers;  // what sign() returns
  std::string signed_names;
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;  // hex
};
HeaderSignature sign_with_details(const Request& request, const Credentials& credentials,
                                  const SigningParams& params, Clock::time_point time);

// Query (presigned URL) signing: returns the complete wire query string (the request's own
// query plus the X-Amz-* parameters, X-Amz-Signature last). Only "host" and any headers
// present in request.headers are signed.
// An empty request.payload_hash is signed as UNSIGNED-PAYLOAD, as S3 presigned URLs are.
// params.add_content_sha256 does not apply (a URL carries no x-amz-content-sha256).
std::string presign(const Request& request, const Credentials& credentials,
                    const SigningParams& params, Clock::time_point time,
                    std::chrono::seconds expires);

// presign() with its intermediates (see HeaderSignature).
struct QuerySignature {
  std::string query;  // what presign() returns
  std::string signed_names;
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;  // hex
};
QuerySignature presign_with_details(const Request& request, const Credentials& credentials,
                                    const SigningParams& params, Clock::time_point time,
                                    std::chrono::seconds expires);

// ---- verification helpers (tfork serve) ---------------------------------------------

struct Authorization {
  std::string access_key_id;
  std::string date8;
  std::string region;
  std::string service;
  std::string signed_headers;  // "host;x-amz-date"
  std::string signature;       // hex
};
// Parses "AWS4-HMAC-SHA256 Credential=AK/20150830/us-east-1/service/aws4_request,
// SignedHeaders=host;x-amz-date, Signature=...". The error is a one-line reason.
std::expected<Authorization, std::string> parse_authorization(std::string_view header_value);

// String to sign of one aws-chunked chunk (sigv4-streaming):
// "AWS4-HMAC-SHA256-PAYLOAD\n<date>\n<scope>\n<previous>\n<sha256("")>\n<sha256(chunk)>".
std::string chunk_string_to_sign(std::string_view amz_date, std::string_view scope,
                                 std::string_view previous_signature,
                                 std::string_view chunk_sha256_hex);
// String to sign of the trailer block (STREAMING-*-TRAILER):
// "AWS4-HMAC-SHA256-TRAILER\n<date>\n<scope>\n<previous>\n<sha256(trailer)>".
std::string trailer_string_to_sign(std::string_view amz_date, std::string_view scope,
                                   std::string_view previous_signature,
                                   std::string_view trailer_sha256_hex);

}  // namespace tfork::sigv4
