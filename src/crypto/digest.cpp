// SPDX-License-Identifier: Apache-2.0
// Digests and HMAC over the binary's crypto primitives (tfork/crypto/primitives.hpp).
#include "tfork/crypto/primitives.hpp"

#include <stdexcept>

namespace tfork::crypto {

std::string sha256(std::string_view data) {
  return primitives().digest(Digest::Algorithm::sha256, data);
}
std::string sha256_hex(std::string_view data) {
  return to_hex(sha256(data));
}
std::string md5(std::string_view data) {
  return primitives().digest(Digest::Algorithm::md5, data);
}
std::string sha1(std::string_view data) {
  return primitives().digest(Digest::Algorithm::sha1, data);
}
std::string hmac_sha256(std::string_view key, std::string_view data) {
  return primitives().hmac_sha256(key, data);
}

struct Digest::State {
  struct ContextFree {
    void operator()(DigestContext* context) const { primitives().digest_free(context); }
  };
  std::unique_ptr<DigestContext, ContextFree> context;
  bool finished = false;
};

Digest::Digest(Algorithm algorithm) : state_(std::make_unique<State>()) {
  state_->context.reset(primitives().digest_begin(algorithm));
}

Digest::~Digest() = default;
Digest::Digest(Digest&&) noexcept = default;
Digest& Digest::operator=(Digest&&) noexcept = default;

void Digest::update(std::string_view data) {
  if (!state_ || state_->finished) throw std::logic_error("Digest::update after finish");
  primitives().digest_update(state_->context.get(), data);
}

std::string Digest::finish() {
  if (!state_ || state_->finished) throw std::logic_error("Digest::finish called twice");
  auto out = primitives().digest_finish(state_->context.get());
  state_->finished = true;
  return out;
}

}  // namespace tfork::crypto
