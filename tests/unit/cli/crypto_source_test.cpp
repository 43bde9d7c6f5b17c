// SPDX-License-Identifier: Apache-2.0
// The crypto seam (tfork/crypto/primitives.hpp): a binary that links tfork_crypto_linked gets
// OpenSSL's primitives through the one resolution, and they work.
#include "tfork/crypto/hash.hpp"
#include "tfork/crypto/primitives.hpp"

#include <catch2/catch.hpp>

TEST_CASE("a binary linking tfork_crypto_linked resolves to OpenSSL's primitives", "[crypto]") {
  CHECK(&tfork::crypto::primitives() == &tfork::crypto::openssl_primitives());
  // HMAC-SHA256 of RFC 4231 test case 2 ("Jefe", "what do ya want for nothing?").
  CHECK(tfork::crypto::to_hex(tfork::crypto::hmac_sha256("Jefe", "what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK(tfork::crypto::sha256_hex("abc") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
