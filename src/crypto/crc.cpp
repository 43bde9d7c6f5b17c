// SPDX-License-Identifier: Apache-2.0
// Reflected (LSB-first) CRCs, slicing-by-8 over compile-time tables. All three checksums
// S3 accepts in x-amz-checksum-* are reflected with init and xorout all ones, so one
// template covers them; the polynomials below are the reflected forms.

#include "tfork/crypto/hash.hpp"

#include <array>
#include <cstddef>

namespace tfork::crypto {
namespace {

template <typename Word>
using SliceTables = std::array<std::array<Word, 256>, 8>;

template <typename Word, Word ReflectedPolynomial>
constexpr SliceTables<Word> make_slice_tables() {
  SliceTables<Word> tables{};
  for (std::size_t byte = 0; byte < 256; ++byte) {
    Word crc = static_cast<Word>(byte);
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc & 1U) != 0 ? static_cast<Word>((crc >> 1U) ^ ReflectedPolynomial)
                            : static_cast<Word>(crc >> 1U);
    tables[0][byte] = crc;
  }
  for (std::size_t slice = 1; slice < 8; ++slice)
    for (std::size_t byte = 0; byte < 256; ++byte) {
      const Word previous = tables[slice - 1][byte];
      tables[slice][byte] = static_cast<Word>((previous >> 8U) ^ tables[0][previous & 0xFFU]);
    }
  return tables;
}

template <typename Word, Word ReflectedPolynomial>
Word reflected_crc(std::string_view data, Word crc) {
  static constexpr SliceTables<Word> tables = make_slice_tables<Word, ReflectedPolynomial>();
  // `crc` is a previous result (or 0), so undo its final xor to continue from it.
  Word state = static_cast<Word>(~crc);
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  std::size_t remaining = data.size();

  while (remaining >= 8) {
    std::uint64_t block = 0;
    for (std::size_t i = 0; i < 8; ++i)
      block |= static_cast<std::uint64_t>(bytes[i]) << (8U * i);  // little-endian load
    block ^= state;
    Word next = 0;
    for (std::size_t i = 0; i < 8; ++i)
      next ^= tables[7 - i][(block >> (8U * i)) & 0xFFU];
    state = next;
    bytes += 8;
    remaining -= 8;
  }
  while (remaining-- > 0)
    state = static_cast<Word>((state >> 8U) ^ tables[0][(state ^ *bytes++) & 0xFFU]);
  return static_cast<Word>(~state);
}

}  // namespace

std::uint32_t crc32(std::string_view data, std::uint32_t crc) {
  return reflected_crc<std::uint32_t, 0xEDB88320U>(data, crc);  // IEEE 802.3 / zlib
}

std::uint32_t crc32c(std::string_view data, std::uint32_t crc) {
  return reflected_crc<std::uint32_t, 0x82F63B78U>(data, crc);  // Castagnoli, RFC 3720 §B.4
}

std::uint64_t crc64nvme(std::string_view data, std::uint64_t crc) {
  // NVM Express Command Set spec §5.2.1.3.4 (CRC-64/NVME), as S3's x-amz-checksum-crc64nvme.
  return reflected_crc<std::uint64_t, 0x9A6C9329AC4BC9B5ULL>(data, crc);
}

}  // namespace tfork::crypto
