// SPDX-License-Identifier: Apache-2.0
// tfork's crypto primitives over OpenSSL (tfork/crypto/primitives.hpp): the only file that
// includes an OpenSSL header.
#include "tfork/crypto/primitives.hpp"

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <memory>
#include <stdexcept>

namespace tfork::crypto {

namespace {

// OpenSSL 3 looks an algorithm up in its provider store on every call that names it by its
// legacy constant (EVP_sha256(), HMAC()): an "implicit fetch", thousands of instructions and a
// lock each time, while SigV4 computes five HMACs and a digest per request. Each algorithm is
// fetched once here and kept for the life of the process, as OpenSSL's crypto(7) advises
// ("Performance").
EVP_MD* fetch(const char* name, const EVP_MD* legacy) {
  EVP_MD* md = EVP_MD_fetch(nullptr, name, nullptr);
  return md != nullptr ? md : const_cast<EVP_MD*>(legacy);  // it then fails where it is used
}

const EVP_MD* evp_md(Digest::Algorithm algorithm) {
  static const EVP_MD* const md5 = fetch("MD5", EVP_md5());
  static const EVP_MD* const sha1 = fetch("SHA1", EVP_sha1());
  static const EVP_MD* const sha256 = fetch("SHA256", EVP_sha256());
  switch (algorithm) {
    case Digest::Algorithm::md5:
      return md5;
    case Digest::Algorithm::sha1:
      return sha1;
    case Digest::Algorithm::sha256:
      return sha256;
  }
  return sha256;
}

struct MacContextFree {
  void operator()(EVP_MAC_CTX* context) const noexcept { EVP_MAC_CTX_free(context); }
};
using MacContext = std::unique_ptr<EVP_MAC_CTX, MacContextFree>;

// An HMAC-SHA256 context with its digest set and no key yet, one per thread (a context is not
// to be shared between threads): each HMAC is a copy of it, keyed.
const EVP_MAC_CTX* hmac_sha256_template() {
  thread_local const MacContext context = [] {
    EVP_MAC* mac = EVP_MAC_fetch(nullptr, OSSL_MAC_NAME_HMAC, nullptr);
    MacContext made(mac != nullptr ? EVP_MAC_CTX_new(mac) : nullptr);
    EVP_MAC_free(mac);  // the context keeps its own reference
    char digest[] = OSSL_DIGEST_NAME_SHA2_256;
    const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                 OSSL_PARAM_END};
    if (!made || EVP_MAC_CTX_set_params(made.get(), params) != 1)
      throw std::runtime_error("OpenSSL cannot make an HMAC-SHA256 context");
    return made;
  }();
  return context.get();
}

// DigestContext is never defined: it is an EVP_MD_CTX under another name.
EVP_MD_CTX* evp(DigestContext* context) {
  return reinterpret_cast<EVP_MD_CTX*>(context);
}

void digest_free(DigestContext* context) noexcept {
  EVP_MD_CTX_free(evp(context));
}

DigestContext* digest_begin(Digest::Algorithm algorithm) {
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  if (context == nullptr || EVP_DigestInit_ex(context, evp_md(algorithm), nullptr) != 1) {
    EVP_MD_CTX_free(context);
    throw std::runtime_error("OpenSSL EVP_DigestInit_ex failed");
  }
  return reinterpret_cast<DigestContext*>(context);
}

void digest_update(DigestContext* context, std::string_view data) {
  if (EVP_DigestUpdate(evp(context), data.data(), data.size()) != 1)
    throw std::runtime_error("OpenSSL EVP_DigestUpdate failed");
}

std::string digest_finish(DigestContext* context) {
  std::string out(EVP_MAX_MD_SIZE, '\0');
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(evp(context), reinterpret_cast<unsigned char*>(out.data()), &length) != 1)
    throw std::runtime_error("OpenSSL EVP_DigestFinal_ex failed");
  out.resize(length);
  return out;
}

std::string digest(Digest::Algorithm algorithm, std::string_view data) {
  const EVP_MD* md = evp_md(algorithm);
  std::string out(static_cast<std::size_t>(EVP_MD_get_size(md)), '\0');
  unsigned int length = 0;
  // EVP_Digest only fails on allocation failure or a broken provider: nothing to recover.
  if (EVP_Digest(data.data(), data.size(), reinterpret_cast<unsigned char*>(out.data()), &length,
                 md, nullptr) != 1)
    throw std::runtime_error("OpenSSL EVP_Digest failed");
  out.resize(length);
  return out;
}

std::string hmac_sha256(std::string_view key, std::string_view data) {
  const MacContext context(EVP_MAC_CTX_dup(hmac_sha256_template()));
  std::string out(EVP_MAX_MD_SIZE, '\0');
  std::size_t length = 0;
  if (!context ||
      EVP_MAC_init(context.get(), reinterpret_cast<const unsigned char*>(key.data()), key.size(),
                   nullptr) != 1 ||
      EVP_MAC_update(context.get(), reinterpret_cast<const unsigned char*>(data.data()),
                     data.size()) != 1 ||
      EVP_MAC_final(context.get(), reinterpret_cast<unsigned char*>(out.data()), &length,
                    out.size()) != 1)
    throw std::runtime_error("OpenSSL HMAC failed");
  out.resize(length);
  return out;
}

std::string random_bytes(std::size_t count) {
  std::string out(count, '\0');
  if (count > 0 &&
      RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(count)) != 1)
    throw std::runtime_error("OpenSSL RAND_bytes failed");
  return out;
}

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');  // + the NUL EVP writes
  const int length = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                     reinterpret_cast<const unsigned char*>(bytes.data()),
                                     static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(length));
  return out;
}

std::optional<std::string> base64_decode_block(std::string_view text) {
  std::string out(text.size() / 4 * 3, '\0');
  const int length = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                     reinterpret_cast<const unsigned char*>(text.data()),
                                     static_cast<int>(text.size()));
  if (length < 0) return std::nullopt;
  out.resize(static_cast<std::size_t>(length));
  return out;
}

constexpr Primitives k_openssl{digest_begin, digest_update, digest_finish,
                               digest_free,  digest,        hmac_sha256,
                               random_bytes, base64_encode, base64_decode_block};

}  // namespace

const Primitives& openssl_primitives() {
  return k_openssl;
}

}  // namespace tfork::crypto
