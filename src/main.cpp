// SPDX-License-Identifier: Apache-2.0
// tfork: options → typed request → signer → transport → typed result → renderer.
// Everything happens in tfork::cli::run; this file only says where the executable's crypto
// comes from (its module: tfork/crypto/primitives.hpp), blocks SIGINT/SIGTERM until the
// command says how it takes them, and hands over the arguments.
#include "tfork/cli/root.hpp"
#include "tfork/crypto/primitives.hpp"
#include "tfork/modules/modules.hpp"

int main(int argc, char** argv) {
  // First of all, before any thread can start: see block_interrupts.
  tfork::cli::block_interrupts();
  tfork::crypto::set_primitives_source(tfork::modules::crypto_primitives);
  return tfork::cli::run(argc, argv);
}
