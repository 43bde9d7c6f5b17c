// SPDX-License-Identifier: Apache-2.0
// The tfork-crypto.so module: OpenSSL's digests, HMAC, random bytes and base64 behind one C
// entry point (tfork/modules/modules.hpp), so that only commands that sign, hash or draw
// random bytes load libcrypto.
#include "tfork/modules/modules.hpp"
#include "tfork/version.hpp"

namespace {

const tfork::modules::CryptoModule k_module{sizeof(tfork::modules::CryptoModule), tfork::k_version,
                                            __VERSION__, tfork::crypto::openssl_primitives()};

}  // namespace

extern "C" [[gnu::visibility("default")]] const tfork::modules::CryptoModule*
tfork_crypto_module() {
  return &k_module;
}
