// SPDX-License-Identifier: Apache-2.0
#include "tfork/workflow/batch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <queue>
#include <utility>

namespace tfork::workflow {
namespace {

using Clock = std::chrono::steady_clock;

bool is_cancelled(const http::Result& result) {
  return !result && result.error().kind == http::TransportError::Kind::cancelled;
}

// One run() as the transport sees it (http::Batch): each item has at most one request out at
// a time, so the item's index is the request's id.
class RunBatch final : public http::Batch {
 public:
  RunBatch(BatchRunner& runner, BatchRunner::Phase* phase, std::vector<tigris::Operation> first,
           const BatchRunner::Judge& judge, std::span<const std::string> names, const bool& stopped)
      : runner_(runner), phase_(phase), judge_(judge), stopped_(stopped), items_(first.size()) {
    names_.reserve(first.size());
    for (std::size_t i = 0; i < first.size(); ++i) {
      names_.push_back(i < names.size() ? names[i] : first[i].bucket);
      items_[i].operation = std::move(first[i]);
      fresh_.push_back(i);
    }
  }

  std::optional<Ready> next() override {
    if (!sending()) return std::nullopt;
    const auto now = Clock::now();
    while (!later_.empty() && later_.top().first <= now) {
      due_.push_back(later_.top().second);
      later_.pop();
    }
    // An item half done goes on before a new one starts: its result is nearer.
    auto& queue = due_.empty() ? fresh_ : due_;
    if (queue.empty()) return std::nullopt;
    const auto index = queue.front();
    queue.pop_front();
    auto& item = items_[index];
    // Signed as it goes out, not when the batch began (a signature is good for minutes).
    item.request = runner_.client().prepare(*item.operation);
    item.operation.reset();
    item.result.sent = true;
    return Ready{index, &*item.request};
  }

  std::optional<Clock::time_point> next_ready_at() const override {
    if (!sending() || later_.empty()) return std::nullopt;
    return later_.top().first;
  }

  bool exhausted() const override {
    return !sending() || (fresh_.empty() && due_.empty() && later_.empty());
  }

  void done(std::size_t index, http::Result answer) override {
    auto& item = items_[index];
    item.request.reset();
    if (is_cancelled(answer)) return;  // undecided: its effect is unknown
    if (answer) {
      if (const auto id = answer->header("x-amz-request-id")) item.result.request_id = *id;
    }
    auto verdict = judge_(index, answer);
    if (verdict.next) {
      item.operation = std::move(verdict.next);
      if (verdict.after.count() > 0)
        later_.emplace(Clock::now() + verdict.after, index);
      else
        due_.push_back(index);
      return;
    }
    item.result.decided = true;
    item.result.outcome = {verdict.status, std::move(verdict.error)};
    if (phase_ && verdict.counted)
      phase_->record(names_[index], verdict.status, verdict.status == output::Status::failed,
                     item.result.request_id);
  }

  std::vector<ItemResult> results() && {
    std::vector<ItemResult> out;
    out.reserve(items_.size());
    for (auto& item : items_)
      out.push_back(std::move(item.result));
    return out;
  }

 private:
  struct Item {
    std::optional<tigris::Operation> operation;  // what it sends next
    std::optional<http::Request> request;        // what it has out now
    ItemResult result;
  };
  using Timed = std::pair<Clock::time_point, std::size_t>;

  bool sending() const { return !stopped_ && !runner_.interrupted(); }

  BatchRunner& runner_;
  BatchRunner::Phase* phase_;
  const BatchRunner::Judge& judge_;
  const bool& stopped_;
  std::vector<Item> items_;
  std::vector<std::string> names_;
  std::deque<std::size_t> fresh_;  // not sent yet, in input order
  std::deque<std::size_t> due_;    // next steps to send now
  std::priority_queue<Timed, std::vector<Timed>, std::greater<>> later_;  // next steps, by time
};

}  // namespace

std::optional<std::chrono::milliseconds> Backoff::wait(int tries_so_far,
                                                       Clock::time_point started) const {
  if (tries_so_far >= tries) return std::nullopt;
  const int doublings = std::clamp(tries_so_far - 1, 0, 30);
  auto wait = first;
  for (int i = 0; i < doublings && wait < cap; ++i)
    wait *= 2;
  wait = std::min(wait, cap);
  if (Clock::now() + wait >= started + budget) return std::nullopt;
  return wait;
}

BatchRunner::BatchRunner(tigris::Client& client, BatchSettings settings)
    : client_(client), settings_(settings) {
  settings_.concurrency = std::max<std::size_t>(settings_.concurrency, 1);
}

bool BatchRunner::interrupted() const {
  return settings_.interrupted != nullptr && settings_.interrupted->load();
}

BatchRunner::Phase::Phase(output::ProgressSink* sink, std::string name, std::size_t total)
    : sink_(sink), name_(std::move(name)), total_(total) {
  emit(output::ProgressEvent::Kind::phase_started, {}, output::Status::none, {});
}

BatchRunner::Phase::~Phase() {
  emit(output::ProgressEvent::Kind::phase_ended, {}, output::Status::none, {});
}

void BatchRunner::Phase::record(std::string_view item, output::Status status, bool failed,
                                std::string_view request_id) {
  ++done_;
  if (failed) ++failed_;
  emit(output::ProgressEvent::Kind::item_done, item, status, request_id);
}

void BatchRunner::Phase::emit(output::ProgressEvent::Kind kind, std::string_view item,
                              output::Status status, std::string_view request_id) const {
  if (!sink_) return;
  output::ProgressEvent event;
  event.kind = kind;
  event.phase = name_;
  event.total = total_;
  event.done = done_;
  event.failed = failed_;
  event.item = item;
  event.status = status;
  event.request_id = request_id;
  sink_->on_event(event);
}

BatchRunner::Phase BatchRunner::phase(std::string name, std::size_t total) const {
  return Phase(settings_.progress, std::move(name), total);
}

std::vector<ItemResult> BatchRunner::run(Phase* phase, std::vector<tigris::Operation> first,
                                         const Judge& judge, std::span<const std::string> names) {
  stopped_ = false;
  if (first.empty()) return {};
  RunBatch batch(*this, phase, std::move(first), judge, names, stopped_);
  client_.send_batch(batch, settings_.concurrency);
  return std::move(batch).results();
}

Error interrupted_error(std::string_view what_now) {
  return Error{
      ErrorKind::interrupted,
      "Interrupted",
      what_now.empty() ? std::string("interrupted") : fmt::format("interrupted; {}", what_now),
      0,
      {}};
}

std::optional<Error> batch_error(const BatchTally& tally, const BatchWords& words) {
  if (tally.failures.empty()) {
    if (tally.total == 0 || tally.missing.size() != tally.total) return std::nullopt;
    std::string names;
    for (std::size_t i = 0; i < tally.missing.size() && i < 5; ++i)
      names += (names.empty() ? "" : ", ") + tally.missing[i];
    if (tally.missing.size() > 5) names += fmt::format(" and {} more", tally.missing.size() - 5);
    return Error{ErrorKind::not_found,
                 "NotFound",
                 fmt::format("nothing to do: no such {}: {}", words.item, names),
                 404,
                 {}};
  }
  const Error& first = *tally.failures.front();
  const bool all_failed = tally.failures.size() == tally.total;
  const bool one_kind = std::ranges::all_of(
      tally.failures, [&](const Error* failure) { return failure->kind == first.kind; });
  if (all_failed && one_kind) {
    if (tally.failures.size() == 1) return first;
    Error error = first;
    error.message = fmt::format("{} {} {}; the first: {}", tally.failures.size(), words.items,
                                words.failed, first.message);
    return error;
  }
  return Error{ErrorKind::partial, "PartialFailure",
               fmt::format("{} of {} {} {}; the first: {}", tally.failures.size(), tally.total,
                           words.items, words.failed, first.message),
               0, first.request_id};
}

namespace {
// Two messages of one cause differ at most in their numbers (a transport's "after 0 ms" and
// "after 1 ms").
bool same_but_numbers(std::string_view a, std::string_view b) {
  auto digits = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (digits(a[i]) && digits(b[j])) {
      while (i < a.size() && digits(a[i]))
        ++i;
      while (j < b.size() && digits(b[j]))
        ++j;
      continue;
    }
    if (a[i] != b[j]) return false;
    ++i;
    ++j;
  }
  return i == a.size() && j == b.size();
}
}  // namespace

std::optional<Error> take_shared_cause(std::span<std::optional<Error>* const> errors,
                                       std::span<const std::string> names) {
  auto cause_of = [&](std::size_t i) {
    std::string_view message = (*errors[i])->message;
    if (i < names.size() && message.starts_with(names[i]) &&
        message.substr(names[i].size()).starts_with(": "))
      message.remove_prefix(names[i].size() + 2);
    // The transport's " (after N attempts)" differs with the timing, not with the cause.
    if (const auto at = message.rfind(" (after ");
        at != std::string_view::npos && message.ends_with(" attempts)"))
      message = message.substr(0, at);
    return message;
  };
  std::optional<std::size_t> first;
  std::size_t failed = 0;
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i]->has_value()) continue;
    ++failed;
    if (!first) {
      first = i;
      continue;
    }
    if ((*errors[i])->code != (*errors[*first])->code ||
        !same_but_numbers(cause_of(i), cause_of(*first)))
      return std::nullopt;
  }
  if (failed == 0 || (failed == 1 && !is_systemic(**errors[*first]))) return std::nullopt;
  Error cause = **errors[*first];
  cause.message = std::string(cause_of(*first));
  for (auto* error : errors)
    error->reset();
  return cause;
}

bool is_systemic(const Error& error) {
  return error.kind == ErrorKind::network || error.kind == ErrorKind::auth;
}

}  // namespace tfork::workflow
