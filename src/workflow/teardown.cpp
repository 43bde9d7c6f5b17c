// SPDX-License-Identifier: Apache-2.0
#include "tfork/workflow/teardown.hpp"

#include "tfork/iam/access_keys.hpp"
#include "tfork/output/render.hpp"
#include "tfork/tigris/buckets.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <ctime>
#include <deque>
#include <map>
#include <set>
#include <span>

namespace tfork::workflow {
namespace {

// A fork `fork create --prefix P` names: "P-<n>" (P may be given as "P-" too). A bare
// starts_with would take run-42-1 for a fork of run-4.
bool is_run_fork(std::string_view bucket, std::string_view prefix) {
  if (prefix.ends_with('-')) prefix.remove_suffix(1);
  if (!bucket.starts_with(prefix) || bucket.size() < prefix.size() + 2) return false;
  const auto rest = bucket.substr(prefix.size());
  return rest[0] == '-' &&
         std::ranges::all_of(rest.substr(1), [](char c) { return c >= '0' && c <= '9'; });
}

// A refused parent delete is sent again after 200 ms, then twice as long each time up to 3 s,
// within TeardownPlan::parent_retry_budget of the first bucket delete.
constexpr std::chrono::milliseconds k_parent_retry_first{200};
constexpr std::chrono::milliseconds k_parent_retry_cap{3000};
constexpr std::string_view k_run_again = "run the same teardown again to finish";

using output::Status;

// Gone, or would be (a dry run's plan counts as done).
bool is_gone_status(Status status) {
  return status == Status::deleted || status == Status::already_gone ||
         status == Status::not_found || status == Status::would_delete;
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A parent delete refused because its forks are still there or still disappearing: 409
// whatever the code, or 400/403 with a fork-related code (gateways differ, issue 7 §4).
bool is_fork_refusal(const Error& error) {
  if (error.http_status == 409) return true;
  if (error.http_status != 400 && error.http_status != 403) return false;
  const auto code = lower(error.code);
  return code.find("fork") != std::string::npos || code.find("child") != std::string::npos;
}

[[noreturn]] void usage(const std::string& message) {
  throw TforkError(ErrorKind::usage, "UsageError", message);
}

// Combines the outcome of one more key delete into the item's key status.
Status merge_key(Status current, Status next) {
  for (auto outcome : {Status::failed, Status::kept, Status::deleted, Status::already_gone})
    if (current == outcome || next == outcome) return outcome;
  return Status::none;
}

// Unix seconds of an RFC 3339 UTC timestamp ("2026-11-29T11:54:28.1Z"); nullopt if unreadable.
std::optional<std::int64_t> unix_seconds(std::string_view text) {
  std::tm tm{};
  int fields[6] = {};
  const int widths[6] = {4, 2, 2, 2, 2, 2};
  const char separators[6] = {'-', '-', 'T', ':', ':', '\0'};
  std::size_t at = 0;
  for (int i = 0; i < 6; ++i) {
    if (at + static_cast<std::size_t>(widths[i]) > text.size()) return std::nullopt;
    const auto part = text.substr(at, static_cast<std::size_t>(widths[i]));
    if (std::from_chars(part.data(), part.data() + part.size(), fields[i]).ptr !=
        part.data() + part.size())
      return std::nullopt;
    at += static_cast<std::size_t>(widths[i]);
    if (separators[i] != '\0') {
      if (at >= text.size() || (text[at] != separators[i] && !(i == 2 && text[at] == ' ')))
        return std::nullopt;
      ++at;
    }
  }
  tm.tm_year = fields[0] - 1900;
  tm.tm_mon = fields[1] - 1;
  tm.tm_mday = fields[2];
  tm.tm_hour = fields[3];
  tm.tm_min = fields[4];
  tm.tm_sec = fields[5];
  return static_cast<std::int64_t>(timegm(&tm));
}

class TeardownRun {
 public:
  TeardownRun(tigris::Client& client, const TeardownPlan& plan, const BatchSettings& settings)
      : runner_(client, settings), plan_(plan), manifests_(plan.manifests) {}

  TeardownResult run() {
    for (const auto& target : plan_.targets)
      add_target(target);
    head_targets(true);
    while (!interrupted() && expand_parents()) {
      head_targets(false);
    }
    if (!interrupted()) check_non_forks();
    if (!interrupted()) list_remaining_keys();
    if (!interrupted()) revoke_keys_and_delete_buckets();
    if (!interrupted()) delete_snapshots();
    // The manifests were written after each batch (mark_manifests).
    return end_run();
  }

 private:
  struct State {
    TeardownTarget target;
    bool headed = false;
    bool visible = false;  // HeadBucket answered 2xx
    std::optional<tigris::BucketHead> head;
    bool parent_checked = false;
    bool deletable = false;
    bool non_fork = false;  // --allow-non-fork: deleted without force, after its snapshots
    // A fork left in place because it has forks of its own: its keys are revoked all the same
    // (issue 21 §2), so that nothing of the run keeps working after it.
    bool revoke_only = false;
  };

  void add_target(TeardownTarget target) {
    index_.emplace(target.bucket, states_.size());
    TeardownItem item;
    item.bucket = target.bucket;
    result_.forks.push_back(std::move(item));
    State state;
    state.target = std::move(target);
    states_.push_back(std::move(state));
  }

  // HeadBucket of every target not asked yet; the first time with the first page of the key
  // listing in the same batch (it costs no round trip of its own).
  void head_targets(bool with_key_listing) {
    std::vector<tigris::Operation> operations;
    std::vector<std::size_t> items;
    std::vector<std::string> names;
    for (std::size_t i = 0; i < states_.size(); ++i) {
      if (states_[i].headed) continue;
      operations.push_back(tigris::head_bucket(states_[i].target.bucket));
      items.push_back(i);
      names.push_back(states_[i].target.bucket);
    }
    if (operations.empty() && !with_key_listing) return;
    auto phase = runner_.phase("checks", operations.size());
    if (with_key_listing) {
      operations.push_back(iam::list_access_keys(""));
      names.emplace_back("access keys");
    }
    const auto results = runner_.run(
        &phase, std::move(operations),
        [&](std::size_t k, const http::Result& answer) {
          if (k == items.size()) {
            on_key_page(answer);
            return Verdict::aside();
          }
          on_head(items[k], answer);
          const auto& item = result_.forks[items[k]];
          if (item.error) return Verdict::done(item.status, item.error);  // skipped or failed
          return Verdict::done(states_[items[k]].visible ? Status::exists : Status::not_found);
        },
        names);
    for (std::size_t k = 0; k < items.size(); ++k) {
      states_[items[k]].headed = true;
      if (!results[k].decided) mark_interrupted(result_.forks[items[k]]);
    }
    if (with_key_listing && !results.back().decided)
      key_listing_error_ = interrupted_error(k_run_again);
  }

  void on_head(std::size_t i, const http::Result& result) {
    auto& state = states_[i];
    auto& item = result_.forks[i];
    auto error = tigris::error_from_result(result, "HeadBucket");
    if (error) {
      if (error->http_status == 404) {
        // Not proof of absence (cli.md §5): a new fork may not be visible yet. Its DELETE goes
        // out all the same; only DeleteBucket's 404 says it is gone.
        state.deletable = true;
        return;
      }
      error->message = state.target.bucket + ": " + error->message;
      mark_failed(item, std::move(*error));
      return;
    }
    state.visible = true;
    state.head = tigris::parse_head_bucket(*result);
    const auto& head = *state.head;
    if (!head.fork_source && plan_.allow_non_fork) {
      // --allow-non-fork deletes an empty bucket only (issue 21 §3): never one that has forks
      // or snapshots, and without force, so that one with objects is refused by the server.
      if (head.is_fork_parent) {
        mark_skipped(item, "BucketHasForks",
                     fmt::format("{} is not a fork and has forks; not deleted (tfork teardown "
                                 "--source {} --all tears down its forks)",
                                 state.target.bucket, state.target.bucket));
        return;
      }
      state.non_fork = true;
    } else if (!plan_.allow_non_fork) {
      // cli.md §5: never the source, never a bucket that is not a fork. The hint names what
      // was most likely meant: the forks of a dataset, never the dataset itself.
      if (!head.fork_source) {
        const bool dataset = head.is_fork_parent || head.snapshots_enabled;
        mark_skipped(
            item, "NotAFork",
            dataset ? fmt::format("{} is not a fork; not deleted (to tear down its forks: tfork "
                                  "teardown --source {} --all)",
                                  state.target.bucket, state.target.bucket)
                    : fmt::format("{} is not a fork; not deleted (tfork bucket rm {} deletes a "
                                  "bucket that is not a fork)",
                                  state.target.bucket, state.target.bucket));
        return;
      }
      if (!state.target.expected_source.empty() &&
          *head.fork_source != state.target.expected_source) {
        mark_skipped(item, "ForkOfAnotherSource",
                     fmt::format("{} is a fork of {}, not of {}; not deleted", state.target.bucket,
                                 *head.fork_source, state.target.expected_source));
        return;
      }
    }
    state.deletable = true;
  }

  // Fork parents: their forks are listed; with --recursive they join the teardown (deleted
  // first); without it the parent is left, key included, unless its forks are all in the set
  // already. True when targets were added (they need their HeadBucket).
  bool expand_parents() {
    bool added = false;
    for (std::size_t i = 0; i < states_.size(); ++i) {
      auto& state = states_[i];
      if (!state.deletable || !state.head || !state.head->is_fork_parent || state.parent_checked)
        continue;
      state.parent_checked = true;
      std::vector<tigris::FoundFork> children;
      try {
        children = tigris::find_forks(client(), state.target.bucket);
      } catch (const TforkError& e) {
        auto error = e.error();
        error.message = state.target.bucket + ": cannot list its forks: " + error.message;
        states_[i].deletable = false;
        mark_failed(result_.forks[i], std::move(error));
        continue;
      }
      std::vector<std::string> outside;
      for (const auto& child : children)
        if (!index_.contains(child.bucket)) outside.push_back(child.bucket);
      if (outside.empty()) continue;
      if (!plan_.recursive) {
        states_[i].deletable = false;
        states_[i].revoke_only = true;
        // Its keys are revoked all the same (the run is over; KEY says what became of them).
        mark_skipped(result_.forks[i], "BucketHasForks",
                     fmt::format("{} has forks of its own ({}); left in place (--recursive "
                                 "deletes its forks and then it)",
                                 states_[i].target.bucket, fmt::join(outside, ", ")));
        continue;
      }
      const auto parent = states_[i].target.bucket;
      for (auto& name : outside) {
        TeardownTarget child;
        child.bucket = std::move(name);
        child.expected_source = parent;
        add_target(std::move(child));
        added = true;
      }
    }
    return added;
  }

  // --allow-non-fork: a bucket that is not a fork goes only when it has no snapshots either
  // (one listing each; objects are the server's to refuse, as the delete is not forced).
  void check_non_forks() {
    for (std::size_t i = 0; i < states_.size() && !interrupted(); ++i) {
      auto& state = states_[i];
      if (!state.deletable || !state.non_fork || !state.head || !state.head->snapshots_enabled)
        continue;
      try {
        const auto snapshots = tigris::list_all_snapshots(client(), state.target.bucket, 1);
        if (snapshots.empty()) continue;
        state.deletable = false;
        mark_skipped(
            result_.forks[i], "BucketHasSnapshots",
            fmt::format("{} is not a fork and has snapshots; not deleted (--allow-non-fork "
                        "deletes only an empty bucket)",
                        state.target.bucket));
      } catch (const TforkError& e) {
        state.deletable = false;
        auto error = e.error();
        error.message = state.target.bucket + ": cannot list its snapshots: " + error.message;
        mark_failed(result_.forks[i], std::move(error));
      }
    }
  }

  // ---- the key listing

  void on_key_page(const http::Result& result) {
    auto error = tigris::error_from_result(result, "ListAccessKeys");
    std::expected<iam::KeyPage, std::string> page = std::unexpected(std::string());
    if (!error) {
      page = iam::parse_key_list(*result);
      if (!page) error = Error{ErrorKind::other, "InvalidResponse", page.error(), 0, {}};
    }
    if (error) {
      key_listing_error_ = std::move(error);
      return;
    }
    for (auto& key : page->keys)
      keys_.push_back(std::move(key));
    next_marker_ = page->marker;
  }

  void list_remaining_keys() {
    std::string seen_marker;
    while (!key_listing_error_ && !next_marker_.empty() && !interrupted()) {
      if (next_marker_ == seen_marker) break;  // a marker that repeats ends the listing
      seen_marker = next_marker_;
      next_marker_.clear();
      on_key_page(client().send(iam::list_access_keys(seen_marker)));
    }
  }

  // ---- keys and buckets

  // A key to revoke: its entry in result_.keys and the targets it has roles on.
  struct Revocation {
    std::size_t key;
    std::vector<std::size_t> on;
  };

  // Every key whose roles are all on buckets this teardown deletes (or leaves in place only
  // because they have forks) is revoked, whatever its name; a key with roles elsewhere too is
  // reported and kept (cli.md §5). A key a manifest records is the run's own: it is revoked
  // whether its bucket is there or not, and whatever roles the listing shows on that bucket
  // (none, once the bucket was deleted by hand). Without the full key listing nothing is
  // deleted: a bucket gone before its key would hand that key to the next bucket of the
  // same name. A key to revoke is `interrupted` in result_.keys until its answer comes.
  std::vector<Revocation> plan_revocations() {
    std::set<std::string, std::less<>> doomed;
    // Recorded key id -> the targets that recorded it.
    std::map<std::string, std::vector<std::size_t>, std::less<>> recorded;
    for (std::size_t i = 0; i < states_.size(); ++i) {
      const auto& state = states_[i];
      // A bucket that is not a fork keeps its keys: they are the operator's, not a run's.
      if ((state.deletable && !state.non_fork) || state.revoke_only)
        doomed.insert(state.target.bucket);
      for (const auto& id : state.target.key_ids)
        recorded[id].push_back(i);
    }
    if (key_listing_error_) {
      // One cause for every fork: said once, as the run's error, and each fork not-attempted,
      // its recorded keys kept (issue 26 §3).
      auto error = *key_listing_error_;
      error.message = "could not list access keys, so nothing was deleted: " + error.message;
      for (std::size_t i = 0; i < states_.size(); ++i) {
        if (!states_[i].deletable) continue;
        states_[i].deletable = false;
        auto& item = result_.forks[i];
        if (item.error) continue;
        item.status = Status::not_attempted;
        if (!states_[i].target.key_ids.empty()) item.key = Status::kept;
      }
      run_cause_ = std::move(error);
      return {};
    }
    const Status unanswered = plan_.dry_run ? Status::would_delete : Status::interrupted;
    std::vector<Revocation> revocations;
    std::set<std::string> listed;
    for (const auto& key : keys_) {
      listed.insert(key.id);
      const auto own = recorded.find(key.id);
      std::vector<std::size_t> on_doomed;
      std::vector<std::string> elsewhere;
      for (const auto& [bucket, role] : key.buckets_role) {
        const auto target = index_.find(bucket);
        const bool recorded_for_it =
            own != recorded.end() && target != index_.end() &&
            std::ranges::find(own->second, target->second) != own->second.end();
        if (doomed.contains(bucket) || recorded_for_it)
          on_doomed.push_back(target->second);
        else
          elsewhere.push_back(bucket);
      }
      if (own != recorded.end())
        for (auto i : own->second)
          if (std::ranges::find(on_doomed, i) == on_doomed.end()) on_doomed.push_back(i);
      if (on_doomed.empty()) continue;
      if (!elsewhere.empty()) {
        result_.keys.push_back(KeyItem{key.id, key.name, Status::kept,
                                       Error{ErrorKind::conflict,
                                             "KeyHasOtherRoles",
                                             fmt::format("key {} also has roles on {}; not deleted",
                                                         key.id, fmt::join(elsewhere, ", ")),
                                             0,
                                             {}}});
        for (auto i : on_doomed)
          result_.forks[i].key = merge_key(result_.forks[i].key, Status::kept);
        continue;
      }
      revocations.push_back({result_.keys.size(), std::move(on_doomed)});
      result_.keys.push_back(KeyItem{key.id, key.name, unanswered, std::nullopt});
    }
    // Recorded keys the listing does not show: most likely gone, asked all the same.
    for (std::size_t i = 0; i < states_.size(); ++i) {
      for (const auto& id : states_[i].target.key_ids) {
        if (listed.contains(id)) continue;
        listed.insert(id);
        revocations.push_back({result_.keys.size(), std::vector<std::size_t>{i}});
        result_.keys.push_back(
            KeyItem{id, key_name_for(states_[i].target.bucket), unanswered, std::nullopt});
      }
    }
    if (plan_.dry_run)
      for (const auto& revocation : revocations)
        for (auto i : revocation.on)
          result_.forks[i].key = Status::would_delete;
    return revocations;
  }

  // The answer to a key's DeleteAccessKey, and what it means for the buckets it has roles on:
  // a bucket stays while a key with a role on it lives (a re-run finishes both).
  void on_revoked(const Revocation& revocation, const http::Result& answer) {
    auto& key_item = result_.keys[revocation.key];
    key_item.status = Status::deleted;
    if (auto error = tigris::error_from_result(answer, "DeleteAccessKey")) {
      if (key_gone(*error)) {
        key_item.status = Status::already_gone;
      } else {
        error->message = key_item.access_key_id + ": " + error->message;
        key_item.status = Status::failed;
        key_item.error = std::move(*error);
      }
    }
    for (auto i : revocation.on) {
      result_.forks[i].key = merge_key(result_.forks[i].key, key_item.status);
      if (key_item.status == Status::failed && states_[i].deletable) {
        states_[i].deletable = false;
        mark_failed(result_.forks[i], *key_item.error);
      }
    }
  }

  // Keys the interruption left unanswered may live, and so their buckets stay; the manifests
  // learn which keys are gone.
  void settle_revocations(std::span<const Revocation> revocations) {
    std::set<std::string> revoked;
    for (const auto& revocation : revocations) {
      const auto& key_item = result_.keys[revocation.key];
      if (key_item.status == Status::interrupted) {
        for (auto i : revocation.on) {
          result_.forks[i].key = Status::interrupted;
          states_[i].deletable = false;
          mark_interrupted(result_.forks[i]);
        }
      } else if (key_item.status != Status::failed) {
        revoked.insert(key_item.access_key_id);
      }
    }
    for (auto& file : manifests_)
      for (auto& fork : file.manifest.forks)
        if (!fork.access_key_id.empty() && revoked.contains(fork.access_key_id))
          fork.key_revoked = true;
  }

  // Waves: a bucket goes only after every bucket of the set that was forked from it.
  std::vector<std::vector<std::size_t>> waves() const {
    std::vector<std::size_t> level(states_.size(), 0);
    for (std::size_t i = 0; i < states_.size(); ++i) {
      if (!states_[i].deletable) continue;
      std::size_t child = i;
      for (std::size_t depth = 0; depth <= states_.size(); ++depth) {
        const auto& head = states_[child].head;
        if (!head || !head->fork_source) break;
        const auto parent = index_.find(*head->fork_source);
        if (parent == index_.end() || !states_[parent->second].deletable) break;
        if (level[parent->second] >= level[child] + 1) break;  // already ordered
        level[parent->second] = level[child] + 1;
        child = parent->second;
      }
    }
    std::vector<std::vector<std::size_t>> out;
    for (std::size_t i = 0; i < states_.size(); ++i) {
      if (!states_[i].deletable) continue;
      if (out.size() <= level[i]) out.resize(level[i] + 1);
      out[level[i]].push_back(i);
    }
    return out;
  }

  // The keys, then the buckets wave by wave, children first. The keys share a batch with the
  // first wave, and each bucket goes as soon as every key with a role on it is gone, so that
  // no bucket waits for the slowest key of the run (issue 25 §3).
  void revoke_keys_and_delete_buckets() {
    const auto revocations = plan_revocations();
    if (plan_.dry_run) {
      for (std::size_t i = 0; i < states_.size(); ++i)
        if (states_[i].deletable) result_.forks[i].status = Status::would_delete;
      return;
    }
    const auto order = waves();
    std::size_t total = 0;
    for (const auto& wave : order)
      total += wave.size();
    auto phase = runner_.phase("forks", total);
    const auto started = std::chrono::steady_clock::now();
    const std::size_t batches = std::max<std::size_t>(order.size(), revocations.empty() ? 0 : 1);
    for (std::size_t w = 0; w < batches && !interrupted(); ++w) {
      delete_wave(phase, w < order.size() ? order[w] : std::vector<std::size_t>{},
                  w == 0 ? std::span(revocations) : std::span<const Revocation>{},
                  w + 1 == order.size(), started);
      if (w == 0) settle_revocations(revocations);
      mark_manifests();
    }
    for (std::size_t i = 0; i < states_.size(); ++i) {
      auto& item = result_.forks[i];
      if (states_[i].deletable && !is_gone_status(item.status)) mark_interrupted(item);
    }
  }

  // One batch: each revocation's DeleteAccessKey, going on to the buckets of the wave whose
  // last key it was; the wave's buckets that wait for no key; and, with the last wave, the
  // first page of each snapshot source's fork listing (delete_snapshots then needs no round
  // trip of its own for it). A parent refused because its forks are still going is sent
  // again with backoff (a verdict's `after`).
  void delete_wave(BatchRunner::Phase& phase, const std::vector<std::size_t>& wave,
                   std::span<const Revocation> revocations, bool last_wave,
                   std::chrono::steady_clock::time_point started) {
    struct Chain {
      enum class Step { key, bucket, listing } step;
      std::size_t at;                     // the revocation, the target or the listing
      std::deque<std::size_t> buckets{};  // the targets it goes on to, in turn
      int tries = 1;                      // sends of the bucket delete it has out
    };
    std::vector<std::size_t> keys_left(states_.size(), 0);
    std::vector<bool> in_wave(states_.size(), false);
    for (auto i : wave)
      in_wave[i] = true;
    std::vector<Chain> chains;
    std::vector<tigris::Operation> first;
    std::vector<std::string> names;
    for (std::size_t r = 0; r < revocations.size(); ++r) {
      for (auto i : revocations[r].on)
        ++keys_left[i];
      const auto& id = result_.keys[revocations[r].key].access_key_id;
      chains.push_back({Chain::Step::key, r});
      first.push_back(iam::delete_access_key(id));
      names.push_back(id);
    }
    for (auto i : wave) {
      if (keys_left[i] > 0 || !states_[i].deletable) continue;
      chains.push_back({Chain::Step::bucket, i});
      first.push_back(delete_bucket_of(i));
      names.push_back(states_[i].target.bucket);
    }
    const auto listings = last_wave ? snapshot_sources() : std::vector<std::string>{};
    for (std::size_t l = 0; l < listings.size(); ++l) {
      chains.push_back({Chain::Step::listing, l});
      first.push_back(tigris::list_forks(listings[l]));
      names.push_back(listings[l] + " forks");
    }
    const Backoff refused_parent{k_parent_retry_first, k_parent_retry_cap, 1'000'000,
                                 plan_.parent_retry_budget};
    // The chain's next bucket, or its end.
    auto go_on = [&](Chain& chain) {
      while (!chain.buckets.empty()) {
        const auto i = chain.buckets.front();
        chain.buckets.pop_front();
        if (!states_[i].deletable) continue;
        chain.step = Chain::Step::bucket;
        chain.at = i;
        chain.tries = 1;
        return Verdict::then(delete_bucket_of(i));
      }
      return Verdict::done(Status::none);
    };
    runner_.run(
        nullptr, std::move(first),
        [&](std::size_t k, const http::Result& answer) -> Verdict {
          auto& chain = chains[k];
          switch (chain.step) {
            case Chain::Step::listing:
              fork_listings_.emplace(listings[chain.at], answer);
              return Verdict::aside();
            case Chain::Step::key:
              on_revoked(revocations[chain.at], answer);
              for (auto i : revocations[chain.at].on)
                if (--keys_left[i] == 0 && in_wave[i] && states_[i].deletable)
                  chain.buckets.push_back(i);
              return go_on(chain);
            case Chain::Step::bucket:
              break;
          }
          const auto i = chain.at;
          if (const auto wait = on_bucket_delete(i, answer, chain.tries, refused_parent, started)) {
            ++chain.tries;
            return Verdict::then(delete_bucket_of(i), *wait);
          }
          const auto& item = result_.forks[i];
          phase.record(item.bucket, item.status, item.status == Status::failed,
                       request_id_of(answer));
          return go_on(chain);
        },
        names);
  }

  tigris::Operation delete_bucket_of(std::size_t i) const {
    return tigris::delete_bucket(states_[i].target.bucket, !states_[i].non_fork);
  }

  // Decides target i from its DeleteBucket answer, or says when to ask again (a parent whose
  // forks are still going).
  std::optional<std::chrono::milliseconds> on_bucket_delete(
      std::size_t i, const http::Result& answer, int tries, const Backoff& refused_parent,
      std::chrono::steady_clock::time_point started) {
    auto& item = result_.forks[i];
    auto error = tigris::error_from_result(answer, "DeleteBucket");
    // A bucket that is not a fork is deleted without force: its BucketNotEmpty (409) is the
    // answer, not forks still going.
    if (error && is_fork_refusal(*error) && !states_[i].non_fork) {
      if (const auto wait = refused_parent.wait(tries, started)) {
        spdlog::info("{}: still sees its forks going; asking again in {} ms", item.bucket,
                     wait->count());
        return wait;
      }
    }
    if (!error) {
      item.status = Status::deleted;
    } else if (bucket_gone(*error)) {
      const bool ours = states_[i].visible || states_[i].target.manifest != k_no_manifest;
      item.status = ours ? Status::already_gone : Status::not_found;
    } else {
      error->message = item.bucket + ": " + error->message;
      mark_failed(item, std::move(*error));
    }
    return std::nullopt;
  }

  static std::string request_id_of(const http::Result& answer) {
    if (!answer) return {};
    const auto id = answer->header("x-amz-request-id");
    return id ? std::string(*id) : std::string();
  }

  // The sources whose snapshot delete_snapshots will check against their remaining forks.
  std::vector<std::string> snapshot_sources() const {
    std::vector<std::string> sources;
    for (const auto& target : plan_.snapshots)
      if (target.only_if_unused && std::ranges::find(sources, target.bucket) == sources.end())
        sources.push_back(target.bucket);
    return sources;
  }

  // ---- snapshots

  void delete_snapshots() {
    for (const auto& target : plan_.snapshots) {
      if (interrupted()) return;
      if (target.manifest != k_no_manifest && !run_forks_gone(target.manifest)) {
        if (!target.version.empty())
          result_.snapshots.push_back(
              SnapshotItem{target.bucket, target.version, Status::skipped,
                           Error{ErrorKind::conflict,
                                 "ForksRemain",
                                 "kept: not every fork of the run is gone yet",
                                 0,
                                 {}}});
        continue;
      }
      try {
        delete_snapshot(target);
      } catch (const TforkError& e) {
        auto error = e.error();
        error.message = fmt::format("snapshot of {}: {}", target.bucket, error.message);
        result_.snapshots.push_back(
            SnapshotItem{target.bucket, target.version, Status::failed, std::move(error)});
      }
    }
  }

  bool run_forks_gone(std::size_t manifest) const {
    for (std::size_t i = 0; i < states_.size(); ++i)
      if (states_[i].target.manifest == manifest && !is_gone_status(result_.forks[i].status))
        return false;
    return true;
  }

  void delete_snapshot(const SnapshotTarget& target) {
    std::vector<std::string> versions;
    if (!target.version.empty()) {
      versions.push_back(target.version);
    } else {
      // A run killed before it learnt its version: the snapshot has its name.
      auto listed = list_snapshots_or_gone(target.bucket);
      if (!listed) return;
      for (const auto& snapshot : *listed) {
        if (!snapshot.name) continue;
        // "tfork P" also names the snapshot of a run with --expires-in ("tfork P expires=...").
        if (target.name_is_prefix ? !snapshot.name->starts_with(target.name)
                                  : *snapshot.name != target.name &&
                                        snapshot_name_without_expiry(*snapshot.name) != target.name)
          continue;
        if (target.expired_by) {
          const auto expires_at = expiry_of_snapshot_name(*snapshot.name);
          if (!expires_at || *expires_at > *target.expired_by) continue;
        }
        if (target.created_before) {
          const auto created = unix_seconds(snapshot.created);
          if (!created || *created >= *target.created_before) continue;
        }
        versions.push_back(snapshot.version);
      }
    }
    if (versions.empty()) return;
    std::set<std::string> in_use;
    // In a dry run the forks are still there: those it would delete count as gone.
    if (target.only_if_unused) {
      std::vector<tigris::FoundFork> forks;
      try {
        // The listing's first page came with the last bucket deletes, when there were any.
        auto listed = fork_listings_.extract(target.bucket);
        forks =
            tigris::find_forks(client(), target.bucket,
                               listed ? std::optional(std::move(listed.mapped())) : std::nullopt);
      } catch (const TforkError& e) {
        if (e.error().kind != ErrorKind::not_found) throw;
      }
      for (const auto& fork : forks)
        if (!index_.contains(fork.bucket) ||
            !is_gone_status(result_.forks[index_.at(fork.bucket)].status))
          in_use.insert(fork.snapshot);
    }
    std::vector<tigris::Operation> deletes;
    std::vector<std::size_t> items;
    // A --source teardown found the forks by a listing, which may miss those made a moment
    // ago from the run's snapshot (tigris-wire §10): said, once per snapshot.
    if (target.only_if_unused && target.manifest == k_no_manifest) {
      std::vector<tigris::Snapshot> taken;
      for (const auto& version : versions)
        taken.push_back({version, {}, {}});
      if (auto warning =
              tigris::listing_lag_warning(target.bucket, taken, std::chrono::system_clock::now()))
        spdlog::warn("{}", *warning);
    }
    for (const auto& version : versions) {
      if (in_use.contains(version)) {
        result_.snapshots.push_back(SnapshotItem{
            target.bucket, version, Status::skipped,
            Error{ErrorKind::conflict,
                  "SnapshotInUse",
                  fmt::format("kept: other forks of {} were made from it", target.bucket),
                  0,
                  {}}});
        continue;
      }
      if (plan_.dry_run) {
        result_.snapshots.push_back(SnapshotItem{target.bucket, version, Status::would_delete, {}});
        continue;
      }
      items.push_back(result_.snapshots.size());
      result_.snapshots.push_back(SnapshotItem{target.bucket, version, Status::failed, {}});
      deletes.push_back(tigris::delete_snapshot(target.bucket, version));
    }
    if (deletes.empty()) return;
    auto phase = runner_.phase("snapshots", deletes.size());
    const auto results = runner_.run(
        &phase, std::move(deletes),
        [&](std::size_t k, const http::Result& answer) {
          auto& item = result_.snapshots[items[k]];
          item.status = Status::deleted;
          if (auto error = tigris::error_from_result(answer, "DeleteBucketSnapshot")) {
            if (snapshot_gone(*error)) {
              item.status = Status::already_gone;
            } else {
              error->message =
                  fmt::format("snapshot {} of {}: {}", item.version, target.bucket, error->message);
              item.status = Status::failed;
              item.error = std::move(*error);
            }
          }
          return Verdict::done(item.status, item.error);
        },
        versions_of(items));
    for (std::size_t k = 0; k < results.size(); ++k)
      if (!results[k].decided) mark_interrupted(result_.snapshots[items[k]]);
    settle_unclear_refusals(target.bucket, items);
  }

  // A gateway that refuses the delete of a gone version with some other 4xx (tigris-wire
  // §10): a version the bucket's listing no longer holds is already gone.
  void settle_unclear_refusals(const std::string& bucket, const std::vector<std::size_t>& items) {
    std::vector<std::string> unclear;
    for (auto k : items) {
      const auto& item = result_.snapshots[k];
      if (item.status == Status::failed && item.error &&
          tigris::snapshot_refusal_unclear(*item.error))
        unclear.push_back(item.version);
    }
    if (unclear.empty()) return;
    std::vector<std::string> absent;
    try {
      absent = tigris::snapshots_absent(client(), bucket, unclear);
    } catch (const TforkError& failure) {
      if (failure.error().kind == ErrorKind::interrupted) return;
      spdlog::warn("could not list the snapshots of {} to check the refused deletes: {}",
                   output::printable(bucket), failure.what());
      return;
    }
    for (auto k : items) {
      auto& item = result_.snapshots[k];
      if (std::ranges::find(absent, item.version) != absent.end()) {
        item.status = Status::already_gone;
        item.error.reset();
      }
    }
  }

  std::vector<std::string> versions_of(const std::vector<std::size_t>& items) const {
    std::vector<std::string> names;
    for (auto k : items)
      names.push_back(result_.snapshots[k].version);
    return names;
  }

  std::optional<std::vector<tigris::Snapshot>> list_snapshots_or_gone(const std::string& bucket) {
    try {
      return tigris::list_all_snapshots(client(), bucket);
    } catch (const TforkError& e) {
      if (e.error().kind == ErrorKind::not_found) return std::nullopt;  // gone with its source
      throw;
    }
  }

  // ---- manifests

  void mark_manifests() {
    for (auto& file : manifests_) {
      for (auto& fork : file.manifest.forks) {
        const auto found = index_.find(fork.bucket);
        if (found == index_.end()) continue;
        if (states_[found->second].target.manifest == k_no_manifest) continue;
        if (is_gone_status(result_.forks[found->second].status) && fork.may_exist())
          fork.status = ForkStatus::deleted;
      }
    }
    save_manifests();
  }

  void save_manifests() {
    for (const auto& file : manifests_) {
      try {
        write_manifest(file.path, file.manifest, false);
      } catch (const TforkError& e) {
        spdlog::warn("{}", e.error().message);
      }
    }
  }

  // ---- outcome

  // Records the item as failed (its first error kept); nothing is thrown.
  void mark_failed(TeardownItem& item, Error error) {
    item.status = Status::failed;
    if (!item.error) item.error = std::move(error);
  }

  // An item the interruption left undecided says so by its status alone; the run's one error
  // says "interrupted" and what to do (issue 26 §3).
  template <typename Item>
  static void mark_interrupted(Item& item) {
    if (item.error) return;  // decided otherwise before the interruption
    item.status = Status::interrupted;
  }

  void mark_skipped(TeardownItem& item, std::string code, std::string message) {
    item.status = Status::skipped;
    if (!item.error)
      item.error = Error{ErrorKind::conflict, std::move(code), std::move(message), 0, {}};
  }

  bool interrupted() const { return runner_.interrupted(); }
  tigris::Client& client() { return runner_.client(); }

  // The exit rule (batch_error) over every fork (done when gone and its key not failed), every
  // failed key and every failed snapshot; fork names none of which exists are "nothing to do"
  // (exit 3), a typo as likely as a finished re-run.
  TeardownResult end_run() {
    static const Error k_failed{ErrorKind::other, "Failed", "failed", 0, {}};
    // A fork left in place keeps the keys its manifest records unless they were revoked.
    for (std::size_t i = 0; i < result_.forks.size(); ++i) {
      auto& item = result_.forks[i];
      if (item.key == Status::none && !is_gone_status(item.status) &&
          !states_[i].target.key_ids.empty())
        item.key = Status::kept;
    }
    if (interrupted()) {
      for (auto& item : result_.forks)
        if (item.status == Status::failed) mark_interrupted(item);
      result_.error = interrupted_error(k_run_again);
      return std::move(result_);
    }
    // Forks that all failed alike (every HeadBucket unreachable, every delete refused the same
    // way) say it once (issue 26 §3).
    std::vector<std::optional<Error>*> errors;
    std::vector<std::string> names;
    for (auto& item : result_.forks) {
      errors.push_back(&item.error);
      names.push_back(item.bucket);
    }
    const auto failed = std::ranges::count_if(errors, [](auto* e) { return e->has_value(); });
    std::optional<Error> shared = take_shared_cause(errors, names);
    if (shared && failed > 1)
      shared->message = fmt::format("{} forks alike: {}", failed, shared->message);
    if (run_cause_) {
      result_.error = std::move(run_cause_);
      if (shared) result_.error->message = shared->message + "; " + result_.error->message;
      return std::move(result_);
    }
    BatchTally tally;
    auto count = [&](bool ok, const std::optional<Error>& error) {
      ++tally.total;
      if (!ok) tally.failures.push_back(error ? &*error : shared ? &*shared : &k_failed);
    };
    for (auto& item : result_.forks) {
      count(is_gone_status(item.status) && item.key != Status::failed, item.error);
      if (item.status == Status::not_found) tally.missing.push_back(item.bucket);
    }
    for (const auto& item : result_.keys)
      if (item.status == Status::failed) count(false, item.error);
    for (const auto& item : result_.snapshots)
      if (item.status == Status::failed) count(false, item.error);
    result_.error = batch_error(tally, {"items", "fork", "could not be torn down"});
    return std::move(result_);
  }

  BatchRunner runner_;
  const TeardownPlan& plan_;
  std::vector<ManifestFile> manifests_;
  TeardownResult result_;
  std::vector<State> states_;  // parallel to result_.forks
  std::map<std::string, std::size_t, std::less<>> index_;
  std::vector<iam::KeySummary> keys_;
  std::string next_marker_;
  std::optional<Error> key_listing_error_;
  std::optional<Error> run_cause_;  // one cause for the whole run, said once
  // The first page of each source's fork listing, sent with the last bucket deletes.
  std::map<std::string, http::Result> fork_listings_;
};

}  // namespace

TeardownPlan plan_from_manifests(std::vector<ManifestFile> manifests, bool delete_snapshot,
                                 bool keep_snapshot) {
  TeardownPlan plan;
  std::map<std::string, std::size_t> index;
  std::set<std::pair<std::string, std::string>> snapshots;
  for (std::size_t m = 0; m < manifests.size(); ++m) {
    const auto& manifest = manifests[m].manifest;
    for (const auto& fork : manifest.forks) {
      const bool live_key = !fork.access_key_id.empty() && !fork.key_revoked;
      if (!fork.may_exist() && !live_key) continue;
      auto [it, added] = index.emplace(fork.bucket, plan.targets.size());
      if (added) {
        TeardownTarget target;
        target.bucket = fork.bucket;
        target.expected_source = manifest.source;
        target.manifest = m;
        plan.targets.push_back(std::move(target));
      }
      auto& target = plan.targets[it->second];
      if (live_key && std::ranges::find(target.key_ids, fork.access_key_id) == target.key_ids.end())
        target.key_ids.push_back(fork.access_key_id);
    }
    // The run's own snapshot (cli.md §5), or one it was given with --delete-snapshot.
    const bool own =
        manifest.snapshot_taken || (manifest.snapshot.empty() && !manifest.snapshot_name.empty());
    const bool wanted = own ? !keep_snapshot : delete_snapshot;
    if (!wanted || (manifest.snapshot.empty() && manifest.snapshot_name.empty())) continue;
    if (!manifest.snapshot.empty() && !snapshots.emplace(manifest.source, manifest.snapshot).second)
      continue;
    plan.snapshots.push_back(SnapshotTarget{
        manifest.source, manifest.snapshot, manifest.snapshot_name, own, m, false, {}, {}});
  }
  plan.manifests = std::move(manifests);
  // A fork made from one of the run's forks (an agent forking its own fork with its key) is
  // part of the run: it goes too, children first, and no key of the run outlives it.
  plan.recursive = true;
  return plan;
}

TeardownPlan plan_from_names(const std::vector<std::string>& names) {
  TeardownPlan plan;
  std::set<std::string_view> seen;
  for (const auto& name : names) {
    if (auto problem = tigris::bucket_name_problem(name))
      usage(fmt::format("invalid bucket name '{}': {}", name, *problem));
    if (!seen.insert(name).second) continue;
    TeardownTarget target;
    target.bucket = name;
    plan.targets.push_back(std::move(target));
  }
  return plan;
}

namespace {

// --source S --expired: the forks of S made from a snapshot of S whose name says it expired
// (the service's record, so it works without the manifest). Their descendants go with them,
// children first: a fork of an expired fork cannot outlive its parent's teardown.
TeardownPlan plan_expired(tigris::Client& client, const SourceSelection& selection,
                          std::vector<tigris::FoundFork> forks,
                          std::chrono::system_clock::time_point now) {
  TeardownPlan plan;
  const auto expiries = snapshot_expiries(tigris::list_all_snapshots(client, selection.source));
  std::vector<std::string> names;
  for (auto& fork : forks) {
    const auto found = expiries.find(fork.snapshot);
    if (found == expiries.end() || !is_expired(found->second, now)) continue;
    names.push_back(std::move(fork.bucket));
  }
  std::ranges::sort(names, output::natural_less);
  names.erase(std::unique(names.begin(), names.end()), names.end());
  for (auto& name : names) {
    TeardownTarget target;
    target.bucket = std::move(name);
    target.expected_source = selection.source;
    plan.targets.push_back(std::move(target));
  }
  plan.recursive = true;
  if (!selection.keep_snapshot) {
    // Every expired snapshot of S no remaining fork uses: fork create took them for runs
    // that have now expired.
    SnapshotTarget snapshots{
        selection.source, "",   "", true,
        k_no_manifest,    true, {}, std::chrono::floor<std::chrono::seconds>(now)};
    plan.snapshots.push_back(std::move(snapshots));
  }
  return plan;
}

}  // namespace

bool manifest_expired(const Manifest& manifest, std::chrono::system_clock::time_point now) {
  if (manifest.expires_at) return is_expired(*manifest.expires_at, now);
  const auto named = expiry_of_snapshot_name(manifest.snapshot_name);
  return named && is_expired(*named, now);
}

TeardownPlan plan_from_source(tigris::Client& client, const SourceSelection& selection,
                              std::chrono::system_clock::time_point now) {
  if (auto problem = tigris::bucket_name_problem(selection.source))
    usage(fmt::format("invalid source bucket name '{}': {}", selection.source, *problem));
  if (selection.expired ? (selection.all || !selection.prefix.empty())
                        : selection.prefix.empty() == !selection.all)
    usage("--source needs --prefix P, --all or --expired: say which of its forks to tear down");
  // Only entries whose fork information names the source (find_forks); a listing entry
  // without it is never taken for a fork (cli.md §5), whatever its name.
  auto forks = tigris::find_forks(client, selection.source);
  if (selection.expired) return plan_expired(client, selection, std::move(forks), now);
  std::optional<std::int64_t> cutoff;
  if (selection.older_than) {
    cutoff = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count() -
             selection.older_than->count();
  }
  std::vector<std::string> names;
  for (auto& fork : forks) {
    if (!selection.all && !is_run_fork(fork.bucket, selection.prefix)) continue;
    if (cutoff) {
      const auto created = unix_seconds(fork.created);
      if (!created || *created >= *cutoff) continue;  // too new, or no date to tell
    }
    names.push_back(std::move(fork.bucket));
  }
  std::ranges::sort(names, output::natural_less);
  names.erase(std::unique(names.begin(), names.end()), names.end());
  TeardownPlan plan;
  for (auto& name : names) {
    TeardownTarget target;
    target.bucket = std::move(name);
    target.expected_source = selection.source;
    plan.targets.push_back(std::move(target));
  }
  if (!selection.keep_snapshot) {
    // The snapshot `fork create --prefix P` takes is named "tfork P" (cli.md §4.1); --all
    // clears up after crashed runs, so every such snapshot no remaining fork uses goes too.
    std::string prefix = selection.prefix;
    if (prefix.ends_with('-')) prefix.pop_back();
    SnapshotTarget snapshots{
        selection.source, "", "tfork " + prefix, true, k_no_manifest, selection.all, cutoff, {}};
    plan.snapshots.push_back(std::move(snapshots));
  }
  return plan;
}

output::Json to_json(const TeardownResult& result) {
  output::Json forks = output::Json::array();
  for (const auto& item : result.forks) {
    forks.push_back(output::item_json(output::Json{{"bucket", item.bucket}},
                                      {item.status, item.error},
                                      output::Json{{"key", output::status_name(item.key)}}));
  }
  output::Json snapshots = output::Json::array();
  for (const auto& item : result.snapshots) {
    snapshots.push_back(
        output::item_json(output::Json{{"bucket", item.bucket}, {"version", item.version}},
                          {item.status, item.error}));
  }
  output::Json keys = output::Json::array();
  for (const auto& item : result.keys) {
    keys.push_back(
        output::item_json(output::Json{{"access_key_id", item.access_key_id}, {"name", item.name}},
                          {item.status, item.error}));
  }
  return output::Json{
      {"forks", std::move(forks)}, {"snapshots", std::move(snapshots)}, {"keys", std::move(keys)}};
}

std::string to_table(const TeardownResult& result) {
  output::Table table({"BUCKET", "STATUS", "KEY", "ERROR"});
  for (const auto& item : result.forks)
    table.row({item.bucket, output::status_cell(item.status),
               std::string(output::status_name(item.key)),
               output::item_error_text({item.status, item.error})});
  for (const auto& item : result.snapshots)
    table.row({item.bucket + " @" + item.version, std::string(output::status_name(item.status)),
               "-", output::item_error_text({item.status, item.error})});
  for (const auto& item : result.keys)
    if (item.status == Status::kept || item.status == Status::failed ||
        item.status == Status::would_delete)
      table.row({"key " + item.access_key_id, std::string(output::status_name(item.status)), "-",
                 output::item_error_text({item.status, item.error})});
  return table.render("no forks to tear down\n");
}

TeardownResult run_teardown(tigris::Client& client, const TeardownPlan& plan,
                            const BatchSettings& settings) {
  return TeardownRun(client, plan, settings).run();
}

}  // namespace tfork::workflow
