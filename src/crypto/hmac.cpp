// SPDX-License-Identifier: Apache-2.0
#include "tfork/crypto/hash.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdexcept>

namespace tfork::crypto {

std::string hmac_sha256(std::string_view key, std::string_view data) {
  std::string out(EVP_MAX_MD_SIZE, '\0');
  unsigned int length = 0;
  // The one-shot HMAC() is not deprecated in OpenSSL 3 (only HMAC_CTX is).
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(),
           reinterpret_cast<unsigned char*>(out.data()), &length) == nullptr)
    throw std::runtime_error("OpenSSL HMAC failed");
  out.resize(length);
  return out;
}

}  // namespace tfork::crypto
