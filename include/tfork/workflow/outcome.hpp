// SPDX-License-Identifier: Apache-2.0
#pragma once
// The exit code of a batch (cli.md §6): 0 when every item succeeded; when none did and all
// failed for the same reason, that reason's code (a fork create of a missing source exits 3
// like any other not-found); otherwise 7, partial failure, with details per item.

#include "tfork/core/error.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tfork::workflow {

struct ItemOutcome {
  bool ok = true;
  ErrorKind kind = ErrorKind::other;  // meaningful when !ok
};

int batch_exit_code(std::span<const ItemOutcome> items);

// The same rule as the error a batch command returns: none when no item failed; else the one
// failure itself, the first of several that failed alike (with their count), or a partial
// failure (exit 7). `items` names them ("buckets").
std::optional<Error> batch_error(std::span<const Error* const> failures, std::size_t total,
                                 std::string_view items);

// A delete whose every named item was never there (a typo, or a re-run with nothing left and
// no manifest to tell): exit 3, "nothing to do", naming them; nullopt when `missing` is not
// every item. `items` names them ("buckets").
std::optional<Error> nothing_found_error(std::span<const std::string> missing, std::size_t total,
                                         std::string_view items);

}  // namespace tfork::workflow
