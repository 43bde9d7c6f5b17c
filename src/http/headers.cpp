// SPDX-License-Identifier: Apache-2.0
// Header lookup and the redaction rules of cli.md §7: no secret key, session token or
// Authorization signature ever reaches a log line.

#include "tfork/core/ascii.hpp"
#include "tfork/http/transport.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace tfork::http {
namespace {

using ascii::icontains;
using ascii::iequals;
using ascii::lower;

constexpr std::string_view k_masked = "***";

// "AWS4-HMAC-SHA256 Credential=AKID/20240101/auto/s3/aws4_request, SignedHeaders=host,
// Signature=abcd" keeps everything but the signature; the key id and scope are not secret and
// are what one needs to debug a SignatureDoesNotMatch.
std::string redact_authorization(std::string_view value) {
  constexpr std::string_view k_signature = "Signature=";
  auto at = value.find(k_signature);
  if (at == std::string_view::npos) {
    // Another scheme ("Basic ...", "Bearer ...", SigV2 "AWS id:sig"): keep only its name.
    auto space = value.find(' ');
    if (space == std::string_view::npos) return std::string(k_masked);
    return std::string(value.substr(0, space + 1)) + std::string(k_masked);
  }
  std::string out(value.substr(0, at + k_signature.size()));
  out += k_masked;
  auto end = value.find(',', at);
  if (end != std::string_view::npos) out += value.substr(end);
  return out;
}

}  // namespace

std::optional<std::string_view> find_header(const Headers& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return std::string_view(value);
  }
  return std::nullopt;
}

std::string redact_header_value(std::string_view name, std::string_view value) {
  if (iequals(name, "authorization")) return redact_authorization(value);
  // x-amz-security-token, x-tigris-secret..., proxy credentials and cookies.
  if (icontains(name, "secret") || icontains(name, "token") ||
      iequals(name, "proxy-authorization") || iequals(name, "cookie") ||
      iequals(name, "set-cookie")) {
    return std::string(k_masked);
  }
  return std::string(value);
}

}  // namespace tfork::http
