// SPDX-License-Identifier: Apache-2.0
// The executable's crypto::primitives() (tfork/crypto/primitives.hpp): OpenSSL's, from the
// tfork-crypto.so module, loaded the first time a command signs, hashes or draws random
// bytes. The executable does not link libcrypto, so the commands that do none of these
// (version, help, completion, serve's own start) never load it.
#include "tfork/crypto/primitives.hpp"
#include "tfork/modules/modules.hpp"

namespace tfork::crypto {

const Primitives& primitives() {
  return modules::crypto().primitives;
}

}  // namespace tfork::crypto
