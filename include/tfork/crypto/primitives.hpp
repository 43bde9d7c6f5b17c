// SPDX-License-Identifier: Apache-2.0
#pragma once
// The few operations tfork takes from OpenSSL (digests, HMAC, random bytes, base64), as one
// struct of function pointers: the seam between tfork's crypto and where it comes from.
// Everything in tfork/crypto/hash.hpp is written over them, once.
//
// Why a seam: loading and initialising libcrypto costs more than the rest of `tfork version`
// (about 3.7 ms and 5 MiB), and most commands never hash. So the executable does not link
// OpenSSL: its primitives come from the tfork-crypto.so module, loaded the first time a command
// signs a request or draws random bytes. Other binaries (the local store's module tfork-serve.so,
// the tests, the benchmarks) link OpenSSL and use it directly.
//
// How a binary says which, in one place each:
//   * the tfork executable: src/main.cpp calls set_primitives_source(modules::crypto_primitives)
//     before anything else (tfork/modules/modules.hpp);
//   * every binary that links the tfork_crypto_linked object library (src/CMakeLists.txt): its
//     one file (src/crypto/linked/primitives.cpp) sets openssl_primitives at start-up.
// primitives() resolves through that source on first use (src/crypto/primitives.cpp); the
// crypto layer itself never names the module loader.

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

// Where a binary's primitives come from: a function returning them, called once, on the first
// use (it may load a module, and throws what that throws).
using PrimitivesSource = const Primitives& (*)();

// Chooses the source of this binary's primitives (see above); call it before any hashing.
void set_primitives_source(PrimitivesSource source);

// The primitives of this binary, ready to call. Throws TforkError when the source cannot give
// them (the executable cannot load tfork-crypto.so), std::logic_error when no source was set.
const Primitives& primitives();

// OpenSSL's implementation (tfork_crypto_openssl, linked into tfork-crypto.so and
// tfork_crypto_linked).
const Primitives& openssl_primitives();

}  // namespace tfork::crypto
