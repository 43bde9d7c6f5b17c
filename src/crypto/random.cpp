// SPDX-License-Identifier: Apache-2.0
#include "tfork/crypto/primitives.hpp"

namespace tfork::crypto {
std::string random_hex(std::size_t bytes) {
  return to_hex(primitives().random_bytes(bytes));
}

std::string random_alnum(std::size_t length) {
  static constexpr std::string_view alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  // Rejection sampling: 256 is not a multiple of 62, so bytes >= 248 (4 * 62) are dropped
  // to keep every symbol equally likely.
  static constexpr unsigned int usable_limit = 256U / alphabet.size() * alphabet.size();
  std::string out;
  out.reserve(length);
  while (out.size() < length) {
    for (const char byte : primitives().random_bytes(length - out.size() + 8)) {
      const auto value = static_cast<unsigned char>(byte);
      if (value >= usable_limit) continue;
      out.push_back(alphabet[value % alphabet.size()]);
      if (out.size() == length) break;
    }
  }
  return out;
}

}  // namespace tfork::crypto
