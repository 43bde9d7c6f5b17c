// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one batch runner of the client (style.md, "One batch runner"). Every command that sends
// N requests — fork create, teardown, bucket rm, snapshot rm and prune, fork head — runs them
// here, and so would the object copies of a promotion (`fork merge --prefix`, issue 23):
//
//   items ──► run(phase, first operations, judge) ──► one ItemResult per item, input order
//               │  each answer, once, on this thread ──► judge(item, answer) ──► Verdict:
//               │      done(status, error)  the item is decided
//               │      then(next, after)    the item goes on with another request (its next
//               │                           step, or the same one again later), no earlier
//               │                           than `after` from now
//               ├─ concurrency: at most BatchSettings::concurrency requests in flight, narrowed
//               │  by throttling (the transport's AIMD window); a request waiting for its turn
//               │  or its time holds no slot, and no phase waits for another's last answer
//               ├─ retries: the transport retries (cli.md §7) below the judge; a verdict's
//               │  `after` is the backoff of a retry the workflow decides itself
//               ├─ interruption: Ctrl-C stops new requests, ends those in flight as cancelled,
//               │  and leaves every undecided item `decided == false`; the judge never sees a
//               │  cancelled answer
//               ├─ stop(): the judge ends the run early (a failure that makes the rest moot)
//               └─ progress: each decided item is an event of the phase (ProgressSink)
//
// The exit rule of a batch (cli.md §6) is batch_error() below; interrupted_error() is the one
// error of an interruption. Nothing here prints, and nothing returns an exit code.

#include "tfork/core/error.hpp"
#include "tfork/output/item_status.hpp"
#include "tfork/output/progress.hpp"
#include "tfork/tigris/client.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::workflow {

// How the batches of one command run: the command line's --concurrency, the process's
// interrupt flag (cli::interrupted()) and who watches (the output layer's progress sink).
struct BatchSettings {
  std::size_t concurrency = 32;
  const std::atomic<bool>* interrupted = nullptr;  // null: never interrupted
  output::ProgressSink* progress = nullptr;        // null: nobody watches
};

// What the judge makes of one answer.
struct Verdict {
  output::Status status = output::Status::failed;
  std::optional<Error> error;  // why it failed, or why it was left alone
  std::optional<tigris::Operation> next;
  std::chrono::milliseconds after{0};
  bool counted = true;  // one of the phase's items (not a listing sent along with them)

  // The item is decided.
  static Verdict done(output::Status status, std::optional<Error> error = std::nullopt) {
    return Verdict{status, std::move(error), std::nullopt, {}, true};
  }
  // The item goes on with `next`, sent no earlier than `after` from now.
  static Verdict then(tigris::Operation next, std::chrono::milliseconds after = {}) {
    return Verdict{output::Status::pending, std::nullopt, std::move(next), after, true};
  }
  // A request sent along with the phase's items (a listing that saves a round trip later):
  // decided, and not counted in the phase's progress.
  static Verdict aside() {
    return Verdict{output::Status::none, std::nullopt, std::nullopt, {}, false};
  }
};

struct ItemResult {
  bool decided = false;        // false: interrupted or stopped before a verdict decided it
  bool sent = false;           // at least one of its requests went out (it may have had an effect)
  output::ItemStatus outcome;  // the verdict's, when decided
  std::string request_id;      // of the last answer, when there was one
};

// The exponential backoff of a retry a workflow decides itself (a parent delete refused while
// its forks go, a name not yet visible): `first` before the second try, doubling up to `cap`,
// for at most `tries` tries in all and within `budget` of the first.
struct Backoff {
  std::chrono::milliseconds first{200};
  std::chrono::milliseconds cap{3000};
  int tries = 1'000'000;
  std::chrono::milliseconds budget{30000};

  // The wait before try number `tries_so_far + 1` of an item first sent at `started`; nullopt
  // when the tries or the budget are spent (the last answer is then final).
  std::optional<std::chrono::milliseconds> wait(
      int tries_so_far, std::chrono::steady_clock::time_point started) const;
};

class BatchRunner {
 public:
  BatchRunner(tigris::Client& client, BatchSettings settings);

  tigris::Client& client() { return client_; }
  const BatchSettings& settings() const { return settings_; }
  bool interrupted() const;

  // A stage of the work as the one watching sees it ("forks", "keys"): `total` items, each
  // counted when a run() within the phase decides it (or when record() says so). Ends when
  // destroyed.
  class Phase {
   public:
    Phase(output::ProgressSink* sink, std::string name, std::size_t total);
    ~Phase();
    Phase(const Phase&) = delete;
    Phase& operator=(const Phase&) = delete;

    // Counts one decided item: `item` names it in the events; `request_id` may be "".
    void record(std::string_view item, output::Status status, bool failed,
                std::string_view request_id = {});

   private:
    void emit(output::ProgressEvent::Kind kind, std::string_view item, output::Status status,
              std::string_view request_id) const;

    output::ProgressSink* sink_;
    std::string name_;
    std::size_t total_;
    std::size_t done_ = 0;
    std::size_t failed_ = 0;
  };
  Phase phase(std::string name, std::size_t total) const;

  using Judge = std::function<Verdict(std::size_t item, const http::Result& answer)>;

  // Sends first[i] for every item i and asks `judge` about each answer (see the top of this
  // file). `names[i]` names item i in progress events (default: the operation's bucket);
  // `phase` may be null (work nobody needs to watch). Returns one result per item, in input
  // order. An item counts as failed in the phase when its status is `failed`.
  std::vector<ItemResult> run(Phase* phase, std::vector<tigris::Operation> first,
                              const Judge& judge, std::span<const std::string> names = {});

  // From the judge: nothing more is sent in this run (items not yet sent, and the next steps
  // of items in flight, stay undecided); the answers in flight still come.
  void stop() { stopped_ = true; }

 private:
  tigris::Client& client_;
  BatchSettings settings_;
  bool stopped_ = false;
};

// The error of an interruption (exit 130, or 143 for SIGTERM): "interrupted" and, when given,
// what to do about it ("; run teardown again to finish").
Error interrupted_error(std::string_view what_now = {});

// How a batch's items are named in its errors: "buckets" / "bucket", and what befell a failed
// one ("could not be deleted").
struct BatchWords {
  std::string items;
  std::string item;
  std::string failed = "failed";
};

// What the exit rule counts: the items, the errors of those that failed (in input order), and
// the names of those that turned out never to have been there.
struct BatchTally {
  std::size_t total = 0;
  std::vector<const Error*> failures;
  std::vector<std::string> missing;
};

// The exit rule of a batch (cli.md §6), the one place it lives:
// * no failure: none, unless every item was missing — "nothing to do: no such bucket: a, b"
//   (exit 3), since a typo and a finished re-run look alike without a manifest to tell;
// * every item failed, all for one kind of reason: that error (a fork create of a missing
//   source exits 3 like any other not-found), prefixed "N <items> <failed>; the first: " when
//   there are several;
// * otherwise a partial failure (exit 7): "F of T <items> <failed>; the first: <message>".
std::optional<Error> batch_error(const BatchTally& tally, const BatchWords& words);

// A cause every failed item shares (an endpoint that cannot be reached, a key refused) is said
// once (issue 26 §3). `errors[i]` is item i's error (empty: it did not fail), and its message
// may begin with the item's name, `names[i]` and ": ". When at least two items failed (or one,
// for a systemic cause: it is not about that item), all with one code and one message once
// that name is set aside, their copies are dropped and the cause is returned (its message
// without a name), for the run's one error; else nothing changes.
std::optional<Error> take_shared_cause(std::span<std::optional<Error>* const> errors,
                                       std::span<const std::string> names);

// A failure that every other item of the batch would meet too: nothing more is worth sending.
bool is_systemic(const Error& error);

}  // namespace tfork::workflow
