// SPDX-License-Identifier: Apache-2.0
#include "tfork/server/auth.hpp"

#include "tfork/core/ascii.hpp"
#include "tfork/crypto/hash.hpp"
#include "tfork/server/time_format.hpp"
#include "tfork/sigv4/signer.hpp"

#include <array>
#include <charconv>
#include <unordered_map>
#include <vector>

namespace tfork::server {
namespace {

// The signing key depends only on the secret, the day, the region and the service, so each
// event or writer thread derives it once a day per key (four HMACs fewer per request). A
// thread keeps at most 64 and forgets them all when full.
std::string signing_key_of(std::string_view secret, std::string_view date8, std::string_view region,
                           std::string_view service) {
  thread_local std::unordered_map<std::string, std::string> derived;
  std::string id;
  id.reserve(secret.size() + date8.size() + region.size() + service.size() + 3);
  id.append(secret).append(1, '\n').append(date8).append(1, '\n').append(region).append(1, '\n');
  id.append(service);
  if (const auto it = derived.find(id); it != derived.end()) return it->second;
  if (derived.size() >= 64) derived.clear();
  auto key = sigv4::signing_key(secret, date8, region, service);
  derived.emplace(std::move(id), key);
  return key;
}

constexpr std::string_view k_algorithm = "AWS4-HMAC-SHA256";

S3Error auth_error(Err id, std::string message = {}) {
  return make_error(id, std::move(message));
}

bool is_hex64(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) return false;
  }
  return true;
}

// x-amz-content-sha256 → payload mode (server-design §5.2).
std::optional<PayloadMode> payload_mode(std::string_view value) {
  if (value == "UNSIGNED-PAYLOAD") return PayloadMode::unsigned_payload;
  if (value == "STREAMING-AWS4-HMAC-SHA256-PAYLOAD") return PayloadMode::streaming_signed;
  if (value == "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER") {
    return PayloadMode::streaming_signed_trailer;
  }
  if (value == "STREAMING-UNSIGNED-PAYLOAD-TRAILER") return PayloadMode::streaming_unsigned_trailer;
  if (is_hex64(value)) return PayloadMode::sha256;
  return std::nullopt;
}

bool signed_names_contain(std::string_view names, std::string_view wanted) {
  while (!names.empty()) {
    const auto semi = names.find(';');
    if (names.substr(0, semi) == wanted) return true;
    if (semi == std::string_view::npos) break;
    names.remove_prefix(semi + 1);
  }
  return false;
}

// The wire query without X-Amz-Signature (a presigned URL signs everything else).
std::string query_without_signature(std::string_view query) {
  std::string out;
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    const auto name = pair.substr(0, pair.find('='));
    if (name == "X-Amz-Signature") continue;
    if (!out.empty()) out.push_back('&');
    out.append(pair);
  }
  return out;
}

// What header and query auth check before any signature maths: the credential scope, the
// signed headers, and that the key exists. Gives the key.
std::expected<KeyRecord, S3Error> check_scope(const Request& request,
                                              const sigv4::Authorization& authorization,
                                              std::string_view amz_date, const KeyLookup& lookup) {
  if (authorization.service != "s3" && authorization.service != "iam") {
    return std::unexpected(auth_error(Err::authorization_header_malformed,
                                      "The credential scope's service must be s3 or iam."));
  }
  if (amz_date.substr(0, 8) != authorization.date8) {
    return std::unexpected(auth_error(Err::authorization_header_malformed,
                                      "The credential date does not match the request date."));
  }
  if (!signed_names_contain(authorization.signed_headers, "host")) {
    return std::unexpected(
        auth_error(Err::authorization_header_malformed, "SignedHeaders must include host."));
  }
  // As S3 does: every x-amz-* header sent must be signed, or a captured request or presigned
  // URL could be replayed with one added (x-amz-copy-source turns a PUT into a copy of any
  // object the signer can read). Tigris's control headers (force delete, fork source,
  // snapshot, merge, rebase) change what a request does just as much, so they too count
  // only when signed.
  for (const auto& [name, value] : request.headers) {
    const auto lower = ascii::lower(name);
    const bool controls = lower.starts_with("x-amz-") || lower.starts_with("x-tigris-") ||
                          lower.starts_with("tigris-");
    if (controls && !signed_names_contain(authorization.signed_headers, lower)) {
      return std::unexpected(
          auth_error(Err::access_denied,
                     "There were headers present in the request which were not signed: " + lower));
    }
  }
  auto key = lookup(authorization.access_key_id);
  if (!key) return std::unexpected(auth_error(Err::invalid_access_key_id));
  return std::move(*key);
}

// The part shared by header and query auth: check the scope, rebuild the canonical request
// from the client's SignedHeaders and compare signatures.
std::expected<Authenticated, S3Error> verify_signature(const Request& request, const Target& target,
                                                       const KeyLookup& lookup,
                                                       const sigv4::Authorization& authorization,
                                                       std::string_view amz_date,
                                                       std::string wire_query,
                                                       std::string payload_hash) {
  auto key = check_scope(request, authorization, amz_date, lookup);
  if (!key) return std::unexpected(std::move(key.error()));

  sigv4::Request canonical_input;
  canonical_input.method = request.method;
  canonical_input.path = target.wire_path;
  canonical_input.query = std::move(wire_query);
  canonical_input.headers = request.headers;
  canonical_input.payload_hash = payload_hash;
  const auto scope =
      sigv4::credential_scope(authorization.date8, authorization.region, authorization.service);
  auto signing_key =
      signing_key_of(key->secret, authorization.date8, authorization.region, authorization.service);
  const auto given = ascii::lower(authorization.signature);
  auto signature_for = [&](const sigv4::Request& input) {
    const auto canonical =
        sigv4::canonical_request(input, authorization.signed_headers, sigv4::UriMode::s3);
    return sigv4::signature(signing_key, sigv4::string_to_sign(amz_date, scope, canonical));
  };
  // One canonical request, one HMAC chain: header values are verified exactly as received
  // (the socket layer alters none), so a wrong signature costs the same as a right one.
  auto expected = signature_for(canonical_input);
  // A '+' in the query is a plus to SigV4, but a client that form-encoded the URL after
  // signing meant a space: the one reading the signature verifies decides, and the request
  // is then carried out with that same decoding (Authenticated::query_plus_is_space). At most
  // one more HMAC chain, only for a query with a '+'.
  bool plus_is_space = false;
  if (!signatures_equal(expected, given) && canonical_input.query.find('+') != std::string::npos) {
    sigv4::Request form = canonical_input;
    form.query.clear();
    for (const char c : canonical_input.query)
      form.query += c == '+' ? std::string_view("%20") : std::string_view(&c, 1);
    expected = signature_for(form);
    plus_is_space = true;
  }
  if (!signatures_equal(expected, given)) {
    return std::unexpected(auth_error(Err::signature_does_not_match));
  }

  Authenticated out;
  out.query_plus_is_space = plus_is_space;
  out.principal = std::move(key->principal);
  out.amz_date = std::string(amz_date);
  out.scope = scope;
  out.signing_key = std::move(signing_key);
  out.seed_signature = expected;
  if (auto mode = payload_mode(payload_hash)) out.payload_mode = *mode;
  if (out.payload_mode == PayloadMode::sha256) out.payload_sha256 = ascii::lower(payload_hash);
  return out;
}

// An Authorization header, parsed, with the signing time it names.
struct HeaderSigning {
  sigv4::Authorization authorization;
  std::string amz_date;
};

// Parses the Authorization header and the signing time (x-amz-date, else Date), and checks
// the time against the server's clock.
std::expected<HeaderSigning, S3Error> header_signing(const Request& request,
                                                     std::string_view header_value,
                                                     Clock::time_point now) {
  if (!header_value.starts_with(k_algorithm)) {
    return std::unexpected(auth_error(Err::authorization_header_malformed,
                                      "Only AWS4-HMAC-SHA256 (SigV4) is supported."));
  }
  auto authorization = sigv4::parse_authorization(header_value);
  if (!authorization) {
    return std::unexpected(auth_error(Err::authorization_header_malformed, authorization.error()));
  }

  // The signing time: x-amz-date, else the Date header.
  std::string amz_date;
  std::optional<Clock::time_point> time;
  if (const auto* value = request.header("x-amz-date")) {
    amz_date = *value;
    time = parse_amz_date(amz_date);
  } else if (const auto* date = request.header("date")) {
    time = parse_http_date(*date);
    if (time) amz_date = sigv4::amz_date(*time);
  }
  if (!time) {
    return std::unexpected(auth_error(
        Err::access_denied, "AWS authentication requires a valid Date or x-amz-date header"));
  }
  const auto skew = now > *time ? now - *time : *time - now;
  if (skew > k_max_clock_skew) return std::unexpected(auth_error(Err::request_time_too_skewed));
  return HeaderSigning{std::move(*authorization), std::move(amz_date)};
}

std::expected<Authenticated, S3Error> header_auth(const Request& request, const Target& target,
                                                  const KeyLookup& lookup,
                                                  const AuthOptions& options,
                                                  std::string_view header_value) {
  auto signing = header_signing(request, header_value, options.now);
  if (!signing) return std::unexpected(std::move(signing.error()));
  std::string payload_hash;
  if (const auto* value = request.header("x-amz-content-sha256")) {
    payload_hash = *value;
    if (!payload_mode(payload_hash))
      return std::unexpected(auth_error(Err::invalid_content_sha256));
  } else if (options.iam) {
    // IAM clients signing as service "iam" (botocore, Go) leave the header out and sign the
    // body's hash (tigris-wire §1.2).
    payload_hash = crypto::sha256_hex(request.body);
  } else {
    return std::unexpected(auth_error(Err::missing_content_sha256));
  }
  return verify_signature(request, target, lookup, signing->authorization, signing->amz_date,
                          target.wire_query, std::move(payload_hash));
}

std::expected<Authenticated, S3Error> query_auth(const Request& request, const Target& target,
                                                 const KeyLookup& lookup,
                                                 const AuthOptions& options) {
  auto param = [&](std::string_view name) -> std::string {
    const auto* value = target.get(name);
    return value ? *value : std::string{};
  };
  const auto malformed = [](std::string message) {
    return std::unexpected(auth_error(Err::authorization_query_malformed, std::move(message)));
  };
  if (param("X-Amz-Algorithm") != k_algorithm) {
    return malformed("X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"");
  }
  const auto credential = param("X-Amz-Credential");
  const auto amz_date = param("X-Amz-Date");
  const auto expires_text = param("X-Amz-Expires");
  sigv4::Authorization authorization;
  authorization.signed_headers = param("X-Amz-SignedHeaders");
  authorization.signature = param("X-Amz-Signature");
  if (credential.empty() || amz_date.empty() || expires_text.empty() ||
      authorization.signed_headers.empty() || authorization.signature.empty()) {
    return malformed(
        "Query-string authentication requires the X-Amz-Algorithm, X-Amz-Credential, "
        "X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.");
  }
  // AK/20130524/us-east-1/s3/aws4_request
  std::array<std::string, 5> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto slash = i + 1 < parts.size() ? credential.find('/', start) : std::string::npos;
    if (i + 1 < parts.size() && slash == std::string::npos)
      return malformed("X-Amz-Credential is malformed");
    parts[i] =
        credential.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    start = slash + 1;
  }
  if (parts[4] != "aws4_request") return malformed("X-Amz-Credential is malformed");
  authorization.access_key_id = parts[0];
  authorization.date8 = parts[1];
  authorization.region = parts[2];
  authorization.service = parts[3];

  long long expires = 0;
  const auto [end, ec] =
      std::from_chars(expires_text.data(), expires_text.data() + expires_text.size(), expires);
  if (ec != std::errc{} || end != expires_text.data() + expires_text.size() || expires < 1 ||
      expires > k_max_presign_expiry.count()) {
    return malformed("X-Amz-Expires must be between 1 and 604800 seconds");
  }
  const auto time = parse_amz_date(amz_date);
  if (!time)
    return malformed("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"");

  // Presigned URLs have no skew check beyond expiry (server-design §5.2, ceph PR #13354),
  // except that a URL dated in the future is not valid yet.
  if (options.now + k_max_clock_skew < *time) {
    return std::unexpected(auth_error(Err::access_denied, "Request is not valid yet"));
  }
  if (options.now > *time + std::chrono::seconds(expires)) {
    return std::unexpected(auth_error(Err::request_expired));
  }
  std::string payload_hash = "UNSIGNED-PAYLOAD";
  if (const auto* value = target.get("X-Amz-Content-Sha256")) payload_hash = *value;
  return verify_signature(request, target, lookup, authorization, amz_date,
                          query_without_signature(target.wire_query), std::move(payload_hash));
}

}  // namespace

bool signatures_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

std::expected<void, S3Error> check_before_body(const Request& request, const KeyLookup& lookup,
                                               Clock::time_point now) {
  const auto* header = request.header("authorization");
  if (!header) {
    return std::unexpected(auth_error(Err::access_denied, "Anonymous access is not allowed."));
  }
  auto signing = header_signing(request, *header, now);
  if (!signing) return std::unexpected(std::move(signing.error()));
  auto key = check_scope(request, signing->authorization, signing->amz_date, lookup);
  if (!key) return std::unexpected(std::move(key.error()));
  return {};
}

std::expected<Authenticated, S3Error> authenticate(const Request& request, const Target& target,
                                                   const KeyLookup& lookup,
                                                   const AuthOptions& options) {
  if (const auto* header = request.header("authorization")) {
    return header_auth(request, target, lookup, options, *header);
  }
  if (target.has("X-Amz-Algorithm") || target.has("X-Amz-Signature")) {
    return query_auth(request, target, lookup, options);
  }
  // No anonymous access: every bucket here is private.
  return std::unexpected(auth_error(Err::access_denied, "Anonymous access is not allowed."));
}

}  // namespace tfork::server
