// Placeholder entry point; the CLI root (src/cli/root.cpp) replaces the body.
#include <cstdio>

#include "tfork/version.hpp"

int main() {
  std::printf("tfork %s\n", tfork::k_version);
  return 0;
}
