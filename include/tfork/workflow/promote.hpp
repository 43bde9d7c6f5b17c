// SPDX-License-Identifier: Apache-2.0
#pragma once
// Promotion (`fork merge FORK --prefix P`, issue 23 §1, cli.md §14): only the fork's changes
// under some prefixes land in its parent, one server-side request per key — CopyObject from
// the fork for a key it wrote, DeleteObject for a key it deleted — through the batch runner
// (bounded concurrency, retries, Ctrl-C). What to send comes from the three-way view
// (fork_diff.hpp): a key whose parent already holds the fork's object (or, for a deletion, no
// longer holds one) is skipped, so a re-run after an interruption sends only what is left.

#include "tfork/core/error.hpp"
#include "tfork/tigris/client.hpp"
#include "tfork/workflow/batch.hpp"
#include "tfork/workflow/fork_diff.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::workflow {

// Why the --prefix values cannot be promoted, or nullopt: each must be non-empty, at most
// 1024 bytes, UTF-8 without control characters (a key prefix, said as the user typed it).
std::optional<std::string> promotion_prefix_problem(std::string_view prefix);
// The prefixes to list, sorted, each once, without one that another covers ("a/b/" under
// "a/"): every key is then listed, and promoted, at most once.
std::vector<std::string> promotion_prefixes(std::vector<std::string> prefixes);

enum class PromotionAction { copy, remove, skip };
std::string_view action_name(PromotionAction action);  // "copy", "delete", "skip"
// What a promotion does with a key of the three-way view: nothing (nullopt) when the fork did
// not change it; skip when the parent already has the fork's version of it; else copy (the
// fork wrote it) or remove (the fork deleted it), a conflict included (--strategy fork-wins).
std::optional<PromotionAction> promotion_action(const ThreeWayChange& change);

struct PromotionItem {
  std::string key;
  PromotionAction action = PromotionAction::copy;  // copy or remove
};

struct PromotionFailure {
  std::string key;
  PromotionAction action = PromotionAction::copy;
  std::optional<Error> error;  // null when a cause shared by every failure was said once
};

struct PromotionOutcome {
  std::int64_t copied = 0;
  std::int64_t deleted = 0;
  std::int64_t already_gone = 0;           // deletes answered 404: the parent no longer had the key
  std::int64_t not_done = 0;               // never answered: interrupted, or stopped by a failure
  std::vector<PromotionFailure> failures;  // in key order
  // Set when the promotion did not finish: interrupted (exit 130/143), every item failed for
  // one reason (that error), or some did (exit 7), per cli.md §6 (batch_error); a cause every
  // failure shared is said here once, not on each row.
  std::optional<Error> error;
};

// Sends every item of `work` (copies from `fork` into `parent`, deletes in `parent`), at most
// settings.concurrency at a time, in a progress phase "objects". A failure that every other
// item would meet too (the endpoint unreachable, the key refused) stops the rest.
PromotionOutcome run_promotion(tigris::Client& client, std::string_view fork,
                               std::string_view parent, std::span<const PromotionItem> work,
                               const BatchSettings& settings);

}  // namespace tfork::workflow
