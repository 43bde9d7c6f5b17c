// SPDX-License-Identifier: Apache-2.0
#pragma once
// Access to the shared SigV4 vectors (TFORK_SHARED_DIR/sigv4), read at run time: the
// vectors are third-party data and are never copied into this repository.

#include "tfork/sigv4/signer.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace tfork::sigv4::testing {

// The shared folder: $TFORK_SHARED_DIR when set, else the one CMake was configured with.
std::filesystem::path shared_dir();

// TFORK_SHARED_DIR/sigv4/<relative>, or nullopt when it does not exist.
std::optional<std::filesystem::path> vector_path(std::string_view relative);

// TFORK_SHARED_DIR/sigv4/<relative>; when it is missing, says so on stderr and ends the
// process with 125, which CTest reports as a skip (SKIP_RETURN_CODE), so that missing
// vectors are never a pass with zero assertions. Only the vector tests call it, and CTest
// runs them on their own (tests/CMakeLists.txt: unit_sigv4_vectors).
std::filesystem::path require_vectors(std::string_view relative);

std::string read_text(const std::filesystem::path& file);

// "20150830T123600Z" or "2015-08-30T12:36:00Z" (UTC) as a time point.
Clock::time_point parse_utc(std::string_view text);

// The value of `name` (exact case) in a wire query, or "" when absent.
std::string query_parameter(std::string_view query, std::string_view name);

// The query without the parameter `name` (exact case).
std::string query_without(std::string_view query, std::string_view name);

}  // namespace tfork::sigv4::testing
