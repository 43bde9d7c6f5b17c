// SPDX-License-Identifier: Apache-2.0
// primitives() for the binaries that link OpenSSL (tfork-serve.so and the tests): OpenSSL's,
// directly. The executable has its own, loading them (src/crypto_primitives.cpp).
#include "tfork/crypto/primitives.hpp"

namespace tfork::crypto {

const Primitives& primitives() {
  return openssl_primitives();
}

}  // namespace tfork::crypto
