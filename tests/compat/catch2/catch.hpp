// SPDX-License-Identifier: Apache-2.0
#pragma once
// Catch2 v3 (Debian 13, Homebrew) split the single header of v2 (Debian 12) into many. The
// tests are written against v2's <catch2/catch.hpp>; when CMake finds v3 it puts this folder
// first on the include path, so the same spelling brings in v3 and the few names v2 had that
// v3 renamed.
#include <catch2/catch_all.hpp>

#include <string>

namespace Catch {
// v2's Catch::Contains is v3's Catch::Matchers::ContainsSubstring.
inline auto Contains(const std::string& text, CaseSensitive sensitivity = CaseSensitive::Yes) {
  return Matchers::ContainsSubstring(text, sensitivity);
}
}  // namespace Catch
