// SPDX-License-Identifier: Apache-2.0
#include "tfork/workflow/promote.hpp"

#include "tfork/output/render.hpp"
#include "tfork/tigris/object_ops.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tfork::workflow {

std::optional<std::string> promotion_prefix_problem(std::string_view prefix) {
  if (prefix.empty()) return "must not be empty (leave --prefix out to merge the whole fork)";
  if (prefix.size() > 1024) return "must be at most 1024 bytes";
  // output::printable changes exactly the control characters and the bytes that are not UTF-8.
  if (output::printable(prefix) != prefix) return "must be UTF-8 without control characters";
  return std::nullopt;
}

std::vector<std::string> promotion_prefixes(std::vector<std::string> prefixes) {
  std::ranges::sort(prefixes);
  std::vector<std::string> kept;
  for (auto& prefix : prefixes) {
    // Sorted, a prefix comes right after any that covers it (or after one it covers too).
    if (!kept.empty() && prefix.starts_with(kept.back())) continue;
    kept.push_back(std::move(prefix));
  }
  return kept;
}

std::string_view action_name(PromotionAction action) {
  switch (action) {
    case PromotionAction::copy:
      return "copy";
    case PromotionAction::remove:
      return "delete";
    case PromotionAction::skip:
      return "skip";
  }
  return "?";
}

std::optional<PromotionAction> promotion_action(const ThreeWayChange& change) {
  if (!change.fork) return std::nullopt;
  // Both sides changed it alike: the parent already holds the fork's version (an earlier,
  // interrupted promotion copied it, or the parent made the same change).
  if (change.parent && !change.conflict) return PromotionAction::skip;
  return *change.fork == ChangeKind::deleted ? PromotionAction::remove : PromotionAction::copy;
}

namespace {

tigris::Operation operation_for(std::string_view fork, std::string_view parent,
                                const PromotionItem& item) {
  return item.action == PromotionAction::remove
             ? tigris::delete_object(parent, item.key)
             : tigris::copy_object(parent, item.key, fork, item.key);
}

}  // namespace

PromotionOutcome run_promotion(tigris::Client& client, std::string_view fork,
                               std::string_view parent, std::span<const PromotionItem> work,
                               const BatchSettings& settings) {
  PromotionOutcome outcome;
  if (work.empty()) return outcome;
  BatchRunner runner(client, settings);
  std::vector<tigris::Operation> operations;
  std::vector<std::string> names;
  operations.reserve(work.size());
  names.reserve(work.size());
  for (const auto& item : work) {
    operations.push_back(operation_for(fork, parent, item));
    names.push_back(item.key);
  }
  std::vector<std::optional<Error>> errors(work.size());
  bool stopped = false;
  auto phase = runner.phase("objects", work.size());
  const auto results = runner.run(
      &phase, std::move(operations),
      [&](std::size_t index, const http::Result& answer) {
        const auto& item = work[index];
        const bool remove = item.action == PromotionAction::remove;
        auto error = tigris::error_from_result(answer, remove ? "DeleteObject" : "CopyObject");
        if (!error) {
          ++(remove ? outcome.deleted : outcome.copied);
          return Verdict::done(remove ? output::Status::deleted : output::Status::created);
        }
        if (remove && error->http_status == 404) {
          ++outcome.already_gone;
          return Verdict::done(output::Status::already_gone);
        }
        error->message = item.key + ": " + error->message;
        if (is_systemic(*error)) {
          stopped = true;
          runner.stop();
        }
        errors[index] = *error;
        return Verdict::done(output::Status::failed, std::move(error));
      },
      names);

  for (std::size_t i = 0; i < results.size(); ++i)
    if (!results[i].decided) ++outcome.not_done;
  if (runner.interrupted() && outcome.not_done > 0) {
    outcome.error = interrupted_error(
        "run the same fork merge again to finish: what already landed is skipped");
  }

  // The failed keys, each with its own error unless one cause is shared (issue 26 §3).
  std::vector<std::optional<Error>*> failed_errors;
  std::vector<std::string> failed_names;
  for (std::size_t i = 0; i < work.size(); ++i) {
    if (!errors[i]) continue;
    outcome.failures.push_back({work[i].key, work[i].action, errors[i]});
  }
  for (auto& failure : outcome.failures) {
    failed_errors.push_back(&failure.error);
    failed_names.push_back(failure.key);
  }
  const auto first_failure =
      outcome.failures.empty() ? std::optional<Error>() : outcome.failures.front().error;
  auto shared = take_shared_cause(failed_errors, failed_names);
  if (outcome.error) return outcome;  // interrupted: that is what the run says

  if (shared && outcome.failures.size() > 1)
    shared->message = fmt::format("{} objects alike: {}", outcome.failures.size(), shared->message);
  BatchTally tally;
  tally.total = work.size();
  static const Error k_not_attempted{ErrorKind::other, "NotAttempted", "not attempted", 0, {}};
  for (const auto& failure : outcome.failures)
    tally.failures.push_back(failure.error ? &*failure.error : &*shared);
  // A stop for a systemic cause leaves the rest unsent: failed alike, for that cause.
  const Error* stop_cause = shared ? &*shared : first_failure ? &*first_failure : &k_not_attempted;
  if (stopped)
    for (std::int64_t i = 0; i < outcome.not_done; ++i)
      tally.failures.push_back(stop_cause);
  if (shared && tally.failures.size() == tally.total) {
    outcome.error = *shared;
    return outcome;
  }
  outcome.error = batch_error(tally, {"objects", "object", "could not be promoted"});
  return outcome;
}

}  // namespace tfork::workflow
