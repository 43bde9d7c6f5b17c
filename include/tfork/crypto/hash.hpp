// SPDX-License-Identifier: Apache-2.0
#pragma once
// Hashes, MACs and encodings over OpenSSL (and small table-driven CRCs). Domain-free. OpenSSL is
// reached through tfork/crypto/primitives.hpp, which says why and how the executable loads it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace tfork::crypto {

std::string sha256(std::string_view data);                             // 32 raw bytes
std::string sha256_hex(std::string_view data);                         // 64 lowercase hex
std::string hmac_sha256(std::string_view key, std::string_view data);  // 32 raw bytes
std::string md5(std::string_view data);                                // 16 raw bytes
std::string sha1(std::string_view data);                               // 20 raw bytes

std::string to_hex(std::string_view bytes);  // lowercase
std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);  // nullopt when malformed

std::uint32_t crc32(std::string_view data, std::uint32_t crc = 0);   // zlib / IEEE polynomial
std::uint32_t crc32c(std::string_view data, std::uint32_t crc = 0);  // Castagnoli
std::uint64_t crc64nvme(std::string_view data, std::uint64_t crc = 0);

// Incremental digests for streamed bodies (the local store hashes uploads as they arrive).
class Digest {
 public:
  enum class Algorithm { md5, sha1, sha256 };
  explicit Digest(Algorithm algorithm);
  ~Digest();
  Digest(Digest&&) noexcept;
  Digest& operator=(Digest&&) noexcept;
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;

  void update(std::string_view data);
  std::string finish();  // raw bytes; the digest cannot be updated afterwards

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Random bytes from the OS CSPRNG, as lowercase hex of `bytes` bytes, or as [A-Za-z0-9].
std::string random_hex(std::size_t bytes);
std::string random_alnum(std::size_t length);

// The bytes of an unsigned integer, most significant first (a CRC as x-amz-checksum-* carries
// it before base64).
template <class T>
std::string big_endian(T value) {
  std::string out(sizeof(T), '\0');
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out[sizeof(T) - 1 - i] = static_cast<char>(value & 0xff);
    value >>= 8;
  }
  return out;
}

}  // namespace tfork::crypto
