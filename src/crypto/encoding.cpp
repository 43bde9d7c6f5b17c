// SPDX-License-Identifier: Apache-2.0
// Hex and base64 (RFC 4648 §4, standard alphabet with padding).

#include "tfork/crypto/primitives.hpp"

#include <array>

namespace tfork::crypto {
namespace {

bool is_base64_symbol(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

}  // namespace

std::string to_hex(std::string_view bytes) {
  static constexpr std::array<char, 16> digits = {'0', '1', '2', '3', '4', '5', '6', '7',
                                                  '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char byte : bytes) {
    const auto value = static_cast<unsigned char>(byte);
    out.push_back(digits[value >> 4U]);
    out.push_back(digits[value & 0x0FU]);
  }
  return out;
}

std::string base64_encode(std::string_view bytes) {
  return primitives().base64_encode(bytes);
}

std::optional<std::string> base64_decode(std::string_view text) {
  // OpenSSL's EVP_DecodeBlock skips surrounding whitespace and keeps padding bytes as zeros, so the
  // strict shape check (Content-MD5 must be exactly base64, S3 answers InvalidDigest
  // otherwise) is done here: groups of 4, alphabet only, '=' only as the last 1–2 symbols.
  if (text.size() % 4 != 0) return std::nullopt;
  std::size_t padding = 0;
  if (!text.empty() && text.back() == '=') ++padding;
  if (text.size() >= 2 && text[text.size() - 2] == '=') ++padding;
  for (std::size_t i = 0; i < text.size() - padding; ++i)
    if (!is_base64_symbol(text[i])) return std::nullopt;
  if (text.empty()) return std::string();

  auto out = primitives().base64_decode_block(text);
  if (!out || out->size() < padding) return std::nullopt;
  out->resize(out->size() - padding);
  return out;
}

}  // namespace tfork::crypto
