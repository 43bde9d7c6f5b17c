// SPDX-License-Identifier: Apache-2.0
#pragma once
// SigV4 verification of incoming requests (server-design.md §5.2): header auth and presigned
// query auth, clock skew, and the payload modes of x-amz-content-sha256. The signature maths
// is tfork::sigv4's; this file decides what to feed it from a received request.

#include "tfork/server/errors.hpp"
#include "tfork/server/http_types.hpp"
#include "tfork/server/principal.hpp"
#include "tfork/server/target.hpp"
#include "tfork/server/time_format.hpp"

#include <chrono>
#include <expected>
#include <functional>
#include <optional>
#include <string>

namespace tfork::server {

using Clock = std::chrono::system_clock;

// The secret and permissions of an access key; nullopt when the key is unknown or inactive.
struct KeyRecord {
  std::string secret;
  Principal principal;
};
using KeyLookup = std::function<std::optional<KeyRecord>(std::string_view access_key_id)>;

inline constexpr std::chrono::minutes k_max_clock_skew{15};
inline constexpr std::chrono::seconds k_max_presign_expiry{604800};

// How the body is framed and protected, from x-amz-content-sha256.
enum class PayloadMode {
  sha256,                      // a hex SHA-256 of the body, checked after the read
  unsigned_payload,            // UNSIGNED-PAYLOAD (and presigned URLs)
  streaming_signed,            // STREAMING-AWS4-HMAC-SHA256-PAYLOAD: aws-chunked, chunk signatures
  streaming_signed_trailer,    // STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER
  streaming_unsigned_trailer,  // STREAMING-UNSIGNED-PAYLOAD-TRAILER: aws-chunked + trailer
};

// What a verified signature leaves for the body checks (chunk signatures chain from it).
struct Authenticated {
  Principal principal;
  PayloadMode payload_mode = PayloadMode::unsigned_payload;
  std::string payload_sha256;  // the claimed hex hash (PayloadMode::sha256)
  std::string amz_date;        // "20130524T000000Z"
  std::string scope;           // "20130524/auto/s3/aws4_request"
  std::string signing_key;     // raw bytes
  std::string seed_signature;  // hex
  // The signature verified with each '+' of the query read as a space (form encoding), not
  // as a plus: the request's query is then decoded that way too.
  bool query_plus_is_space = false;
};

struct AuthOptions {
  bool iam = false;  // IAM requests may omit x-amz-content-sha256 (the body hash is signed)
  Clock::time_point now;
};

// Verifies the signature (header or presigned) of `request`. Does not read the body beyond
// hashing it when an IAM request omits x-amz-content-sha256.
std::expected<Authenticated, S3Error> authenticate(const Request& request, const Target& target,
                                                   const KeyLookup& lookup,
                                                   const AuthOptions& options);

// Of a request signed in its Authorization header, everything `authenticate` checks but the
// signature itself: the header's form, the signing time against `now`, the credential scope
// (service s3 or iam, the date of the signing time), the signed headers, and that the key
// exists. An IAM call that signs its body's hash is checked so before its body is read.
std::expected<void, S3Error> check_before_body(const Request& request, const KeyLookup& lookup,
                                               Clock::time_point now);

// Constant-time comparison of two signatures.
bool signatures_equal(std::string_view a, std::string_view b);

}  // namespace tfork::server
