// SPDX-License-Identifier: Apache-2.0
// tfork: options → typed request → signer → transport → typed result → renderer.
// Everything happens in tfork::cli::run; this file only hands over the arguments.
#include "tfork/cli/root.hpp"

int main(int argc, char** argv) {
  return tfork::cli::run(argc, argv);
}
