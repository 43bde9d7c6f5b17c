// SPDX-License-Identifier: Apache-2.0
// Parsing of the Authorization header value for verification (server-design.md §5.2):
// "AWS4-HMAC-SHA256 Credential=AK/20150830/us-east-1/service/aws4_request,
//  SignedHeaders=host;x-amz-date, Signature=<64 hex>". SDKs differ in the separator
// (", " from most, "," in the S3 docs), so whitespace around components is ignored.
// Every error is one line; the server answers AuthorizationHeaderMalformed with it.

#include "tfork/core/ascii.hpp"
#include "tfork/sigv4/signer.hpp"

#include <array>
#include <optional>

namespace tfork::sigv4 {
namespace {

constexpr std::string_view algorithm = "AWS4-HMAC-SHA256";

bool is_digits(std::string_view text) {
  for (const char c : text)
    if (c < '0' || c > '9') return false;
  return true;
}

bool is_lower_hex(std::string_view text) {
  for (const char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// "AK/date8/region/service/aws4_request" into the fields of `out`.
std::optional<std::string> parse_credential(std::string_view credential, Authorization& out) {
  std::array<std::string_view, 5> parts{};
  std::size_t count = 0;
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = credential.find('/', start);
    if (count == parts.size()) return "Credential has more than 5 '/'-separated parts";
    parts[count++] = credential.substr(start, slash - start);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (count != parts.size())
    return "Credential must be <access key>/<yyyymmdd>/<region>/<service>/aws4_request";
  if (parts[0].empty()) return "Credential has an empty access key id";
  if (parts[1].size() != 8 || !is_digits(parts[1]))
    return "Credential date '" + std::string(parts[1]) + "' is not yyyymmdd";
  if (parts[2].empty()) return "Credential has an empty region";
  if (parts[3].empty()) return "Credential has an empty service";
  if (parts[4] != "aws4_request")
    return "Credential must end in aws4_request, not '" + std::string(parts[4]) + "'";
  out.access_key_id = parts[0];
  out.date8 = parts[1];
  out.region = parts[2];
  out.service = parts[3];
  return std::nullopt;
}

}  // namespace

std::expected<Authorization, std::string> parse_authorization(std::string_view header_value) {
  std::string_view rest = ascii::trim(header_value);
  if (!rest.starts_with(algorithm) ||
      (rest.size() > algorithm.size() && rest[algorithm.size()] != ' '))
    return std::unexpected("unsupported authorization scheme (expected AWS4-HMAC-SHA256)");
  rest.remove_prefix(algorithm.size());
  if (ascii::trim(rest).empty())
    return std::unexpected("missing Credential, SignedHeaders and Signature");

  Authorization out;
  bool have_credential = false;
  bool have_signed_headers = false;
  bool have_signature = false;
  std::size_t start = 0;
  while (start <= rest.size()) {
    const std::size_t comma = std::min(rest.find(',', start), rest.size());
    const std::string_view component = ascii::trim(rest.substr(start, comma - start));
    start = comma + 1;
    if (component.empty()) return std::unexpected("empty component in Authorization");

    const std::size_t equals = component.find('=');
    if (equals == std::string_view::npos)
      return std::unexpected("component '" + std::string(component) + "' has no '='");
    const std::string_view name = component.substr(0, equals);
    const std::string_view value = component.substr(equals + 1);
    if (value.find_first_of(" \t") != std::string_view::npos)
      return std::unexpected(std::string(name) +
                             " contains a space (missing ',' between components?)");

    if (name == "Credential") {
      if (have_credential) return std::unexpected("Credential given twice");
      have_credential = true;
      if (auto error = parse_credential(value, out)) return std::unexpected(std::move(*error));
    } else if (name == "SignedHeaders") {
      if (have_signed_headers) return std::unexpected("SignedHeaders given twice");
      have_signed_headers = true;
      if (value.empty()) return std::unexpected("SignedHeaders is empty");
      out.signed_headers = value;
    } else if (name == "Signature") {
      if (have_signature) return std::unexpected("Signature given twice");
      have_signature = true;
      if (value.size() != 64 || !is_lower_hex(value))
        return std::unexpected("Signature must be 64 lowercase hex digits");
      out.signature = value;
    } else {
      return std::unexpected("unknown component '" + std::string(name) + "'");
    }
  }
  if (!have_credential) return std::unexpected("missing Credential");
  if (!have_signed_headers) return std::unexpected("missing SignedHeaders");
  if (!have_signature) return std::unexpected("missing Signature");
  return out;
}

}  // namespace tfork::sigv4
