// SPDX-License-Identifier: Apache-2.0
#pragma once
// The few operations tfork takes from OpenSSL (digests, HMAC, random bytes, base64), as a
// struct of function pointers. Everything in tfork/crypto/hash.hpp is written over them, once.
//
// Why a struct: loading and initialising libcrypto costs more than the rest of `tfork version`
// (about 3.7 ms), and most commands never hash. So the executable does not link OpenSSL: its
// primitives() loads the tfork-crypto.so module on first use (tfork/modules/modules.hpp), the
// first time a command signs a request or draws random bytes. The local store (tfork-serve.so)
// and the tests link tfork_crypto_linked, whose primitives() is openssl_primitives() directly.
// Each binary has exactly one definition of primitives() (src/CMakeLists.txt).

#include "tfork/crypto/hash.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace tfork::crypto {

struct DigestContext;  // the implementation's streaming state (an EVP_MD_CTX)

struct Primitives {
  // A streamed digest: begin, update any number of times, finish once (raw bytes), then free.
  // begin never returns null; every function throws std::runtime_error when OpenSSL fails.
  DigestContext* (*digest_begin)(Digest::Algorithm algorithm);
  void (*digest_update)(DigestContext* context, std::string_view data);
  std::string (*digest_finish)(DigestContext* context);
  void (*digest_free)(DigestContext* context) noexcept;
  std::string (*digest)(Digest::Algorithm algorithm, std::string_view data);  // one shot, raw
  std::string (*hmac_sha256)(std::string_view key, std::string_view data);    // raw
  // `count` bytes from a CSPRNG seeded by the OS.
  std::string (*random_bytes)(std::size_t count);
  std::string (*base64_encode)(std::string_view bytes);
  // The bytes of well-formed base64 (the caller checks the shape), padding bytes included as
  // zeros; nullopt when the decoder refuses it.
  std::optional<std::string> (*base64_decode_block)(std::string_view text);
};

// The primitives of this binary (see above), ready to call; throws TforkError when the
// executable cannot load tfork-crypto.so.
const Primitives& primitives();

// OpenSSL's implementation (tfork_crypto_openssl, linked into tfork-crypto.so and
// tfork_crypto_linked).
const Primitives& openssl_primitives();

}  // namespace tfork::crypto
