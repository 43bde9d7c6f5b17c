#include "tfork/workflow/outcome.hpp"

#include <algorithm>

namespace tfork::workflow {

int batch_exit_code(std::span<const ItemOutcome> items) {
  const auto failed = std::ranges::count_if(items, [](const auto& item) { return !item.ok; });
  if (failed == 0) return 0;
  if (static_cast<std::size_t>(failed) == items.size()) {
    const auto kind = items.front().kind;
    if (std::ranges::all_of(items, [kind](const auto& item) { return item.kind == kind; }))
      return exit_code(kind);
  }
  return exit_code(ErrorKind::partial);
}

}  // namespace tfork::workflow
