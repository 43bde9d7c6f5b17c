// SPDX-License-Identifier: Apache-2.0
#include "tfork/crypto/hash.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace tfork::crypto {
namespace {

const EVP_MD* evp_md(Digest::Algorithm algorithm) {
  switch (algorithm) {
    case Digest::Algorithm::md5:
      return EVP_md5();
    case Digest::Algorithm::sha1:
      return EVP_sha1();
    case Digest::Algorithm::sha256:
      return EVP_sha256();
  }
  return EVP_sha256();
}

std::string one_shot(const EVP_MD* md, std::string_view data) {
  std::string out(static_cast<std::size_t>(EVP_MD_get_size(md)), '\0');
  unsigned int length = 0;
  // EVP_Digest only fails on allocation failure or a broken provider: nothing to recover.
  if (EVP_Digest(data.data(), data.size(), reinterpret_cast<unsigned char*>(out.data()), &length,
                 md, nullptr) != 1)
    throw std::runtime_error("OpenSSL EVP_Digest failed");
  out.resize(length);
  return out;
}

}  // namespace

std::string sha256(std::string_view data) {
  return one_shot(EVP_sha256(), data);
}
std::string sha256_hex(std::string_view data) {
  return to_hex(sha256(data));
}
std::string md5(std::string_view data) {
  return one_shot(EVP_md5(), data);
}
std::string sha1(std::string_view data) {
  return one_shot(EVP_sha1(), data);
}

struct Digest::State {
  struct ContextFree {
    void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
  };
  std::unique_ptr<EVP_MD_CTX, ContextFree> context;
  bool finished = false;
};

Digest::Digest(Algorithm algorithm) : state_(std::make_unique<State>()) {
  state_->context.reset(EVP_MD_CTX_new());
  if (!state_->context || EVP_DigestInit_ex(state_->context.get(), evp_md(algorithm), nullptr) != 1)
    throw std::runtime_error("OpenSSL EVP_DigestInit_ex failed");
}

Digest::~Digest() = default;
Digest::Digest(Digest&&) noexcept = default;
Digest& Digest::operator=(Digest&&) noexcept = default;

void Digest::update(std::string_view data) {
  if (!state_ || state_->finished) throw std::logic_error("Digest::update after finish");
  if (EVP_DigestUpdate(state_->context.get(), data.data(), data.size()) != 1)
    throw std::runtime_error("OpenSSL EVP_DigestUpdate failed");
}

std::string Digest::finish() {
  if (!state_ || state_->finished) throw std::logic_error("Digest::finish called twice");
  std::string out(EVP_MAX_MD_SIZE, '\0');
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(state_->context.get(), reinterpret_cast<unsigned char*>(out.data()),
                         &length) != 1)
    throw std::runtime_error("OpenSSL EVP_DigestFinal_ex failed");
  state_->finished = true;
  out.resize(length);
  return out;
}

}  // namespace tfork::crypto
