// SPDX-License-Identifier: Apache-2.0
// The one resolution of crypto::primitives() (tfork/crypto/primitives.hpp): whatever source the
// binary chose, asked once.
#include "tfork/crypto/primitives.hpp"

#include <atomic>
#include <stdexcept>

namespace tfork::crypto {
namespace {

std::atomic<PrimitivesSource> g_source{nullptr};

}  // namespace

void set_primitives_source(PrimitivesSource source) {
  g_source.store(source, std::memory_order_release);
}

const Primitives& primitives() {
  // A function-local static: the source runs once (it may load a module) and every caller,
  // on any thread, sees its result.
  static const Primitives& chosen = []() -> const Primitives& {
    const auto source = g_source.load(std::memory_order_acquire);
    if (source == nullptr)
      throw std::logic_error(
          "no crypto primitives in this binary: link tfork_crypto_linked or call "
          "crypto::set_primitives_source first");
    return source();
  }();
  return chosen;
}

}  // namespace tfork::crypto
