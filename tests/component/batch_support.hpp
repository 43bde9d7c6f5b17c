// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the component tests give the batch runner (tfork/workflow/batch.hpp), and how they read
// a typed outcome's exit code.

#include "tfork/core/error.hpp"
#include "tfork/workflow/batch.hpp"

#include <atomic>
#include <cstddef>
#include <optional>

namespace tfork::testing {

// The batch settings of a test: its interrupt flag, a window, nobody watching.
inline workflow::BatchSettings batch(const std::atomic<bool>& interrupted,
                                     std::size_t concurrency = 32) {
  return {concurrency, &interrupted, nullptr};
}

// The exit code cli::run would give an outcome's error (0 without one).
inline int exit_of(const std::optional<Error>& error) {
  return error ? exit_code(error->kind) : 0;
}

}  // namespace tfork::testing
