// SPDX-License-Identifier: Apache-2.0
// The crypto source of every binary that links OpenSSL (tfork-serve.so, the tests, the
// benchmarks): OpenSSL's primitives, chosen at start-up, before main() or the module's entry
// can hash anything (tfork/crypto/primitives.hpp). The executable chooses its own in main.cpp.
#include "tfork/crypto/primitives.hpp"

namespace tfork::crypto {
namespace {

[[maybe_unused]] const bool k_openssl_chosen = [] {
  set_primitives_source(openssl_primitives);
  return true;
}();

}  // namespace
}  // namespace tfork::crypto
