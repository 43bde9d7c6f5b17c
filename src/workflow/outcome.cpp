// SPDX-License-Identifier: Apache-2.0
#include "tfork/workflow/outcome.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

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

std::optional<Error> batch_error(std::span<const Error* const> failures, std::size_t total,
                                 std::string_view items) {
  if (failures.empty()) return std::nullopt;
  std::vector<ItemOutcome> outcomes(total - failures.size());
  for (const auto* failure : failures)
    outcomes.push_back({false, failure->kind});
  if (batch_exit_code(outcomes) != exit_code(ErrorKind::partial)) {
    if (failures.size() == 1) return *failures.front();
    Error error = *failures.front();
    error.message = fmt::format("{} {} could not be deleted; the first: {}", failures.size(), items,
                                error.message);
    return error;
  }
  return Error{ErrorKind::partial,
               "PartialFailure",
               fmt::format("{} of {} {} could not be deleted", failures.size(), total, items),
               0,
               {}};
}

std::optional<Error> nothing_found_error(std::span<const std::string> missing, std::size_t total,
                                         std::string_view items) {
  if (missing.empty() || missing.size() != total) return std::nullopt;
  std::string names;
  for (std::size_t i = 0; i < missing.size() && i < 5; ++i)
    names += (names.empty() ? "" : ", ") + missing[i];
  if (missing.size() > 5) names += fmt::format(" and {} more", missing.size() - 5);
  return Error{ErrorKind::not_found,
               "NotFound",
               fmt::format("nothing to do: no such {}: {}", items, names),
               404,
               {}};
}

}  // namespace tfork::workflow
