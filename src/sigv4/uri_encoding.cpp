// SPDX-License-Identifier: Apache-2.0
// Percent-encoding as SigV4 defines it ("UriEncode" in the S3 API Reference, "Signature
// Calculations for the Authorization Header"): every byte outside RFC 3986 unreserved
// (A-Z a-z 0-9 - _ . ~) becomes %XY with uppercase hex; '/' is kept only in paths.

#include "tfork/sigv4/signer.hpp"

#include <optional>

namespace tfork::sigv4 {
namespace {

bool is_unreserved(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~';
}

std::optional<unsigned int> hex_value(char c) {
  if (c >= '0' && c <= '9') return static_cast<unsigned int>(c - '0');
  if (c >= 'A' && c <= 'F') return static_cast<unsigned int>(c - 'A' + 10);
  if (c >= 'a' && c <= 'f') return static_cast<unsigned int>(c - 'a' + 10);
  return std::nullopt;
}

}  // namespace

std::string uri_encode(std::string_view bytes, bool keep_slash) {
  static constexpr std::string_view digits = "0123456789ABCDEF";
  std::string out;
  out.reserve(bytes.size() * 3);
  for (const char c : bytes) {
    if (is_unreserved(c) || (keep_slash && c == '/')) {
      out.push_back(c);
      continue;
    }
    const auto value = static_cast<unsigned char>(c);
    out.push_back('%');
    out.push_back(digits[value >> 4U]);
    out.push_back(digits[value & 0x0FU]);
  }
  return out;
}

std::string uri_decode(std::string_view text) {
  // A '%' not followed by two hex digits is kept literally (it is re-encoded as %25), the
  // way S3 treats a stray '%'. '+' is data here, not a space: SigV4 never uses form encoding.
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const auto high = hex_value(text[i + 1]);
      const auto low = hex_value(text[i + 2]);
      if (high && low) {
        out.push_back(static_cast<char>((*high << 4U) | *low));
        i += 2;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

}  // namespace tfork::sigv4
