#pragma once
// The exit code of a batch (cli.md §6): 0 when every item succeeded; when none did and all
// failed for the same reason, that reason's code (a fork create of a missing source exits 3
// like any other not-found); otherwise 7, partial failure, with details per item.

#include "tfork/core/error.hpp"

#include <span>

namespace tfork::workflow {

struct ItemOutcome {
  bool ok = true;
  ErrorKind kind = ErrorKind::other;  // meaningful when !ok
};

int batch_exit_code(std::span<const ItemOutcome> items);

}  // namespace tfork::workflow
