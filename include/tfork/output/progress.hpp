// SPDX-License-Identifier: Apache-2.0
#pragma once
// Progress of long work, drawn from events (issue 26 §1; cli.md §6). A workflow never draws:
// its batch runner (tfork/workflow/batch.hpp) tells a ProgressSink that a phase started, that
// an item was decided, that the phase ended; the sink chosen for the run draws that
//  * on a terminal: one live line per phase, redrawn in place with the count, the rate and the
//    time left, and replaced (not stacked) by the next phase's line; erased at the end;
//  * in a log (stderr not a terminal): a plain line every few seconds and one at each phase's
//    end;
//  * for programs (--progress json): one JSON object per event and line, on stderr.
// Phases of fewer than a few items are too quick to read and get no line (they do get events).

#include "tfork/output/item_status.hpp"

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace tfork::output {

struct ProgressEvent {
  enum class Kind { phase_started, item_done, phase_ended };
  Kind kind = Kind::item_done;
  std::string_view phase;  // "forks", "keys", "buckets", "snapshots", ...
  std::size_t total = 0;   // items in the phase
  std::size_t done = 0;    // items decided so far (with this one)
  std::size_t failed = 0;  // of those, failed
  // item_done only: the item, how it ended, and the request id of its last answer ("" when
  // there was none).
  std::string_view item;
  Status status = Status::failed;
  std::string_view request_id;
};

// Receives the events of one run. Events come from the thread that runs the batch, one at a
// time; a sink may draw from a thread of its own meanwhile (so that a line moves while nothing
// finishes), under its own lock.
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  virtual void on_event(const ProgressEvent& event) = 0;
  // The run is over: whatever is still drawn goes (a live line is erased, so that the result
  // and the summary are printed on a clean line). Idempotent.
  virtual void close() {}
};

enum class ProgressMode {
  none,      // nothing (-q, --no-progress, --progress none)
  terminal,  // the live line
  plain,     // plain periodic lines
  json,      // NDJSON events
};

// The sink of `mode`, writing to `out` (stderr in the CLI); nullptr for ProgressMode::none.
std::unique_ptr<ProgressSink> make_progress_sink(ProgressMode mode, std::FILE* out);

// ---- the texts, on their own so that they can be tested

// "0.3s" below 10 s, then "12s", "2m05s", "1h02m03s".
std::string duration_text(std::chrono::milliseconds duration);

// The line of a phase still running: "forks 81/200, 2 failed, 162/s, ETA 1s" (the failures only
// when there are some; the time left in whole seconds, rounded up; before the first item is
// decided, the time spent instead of the rate: "forks 0/200, 3.0s").
std::string progress_line(std::string_view phase, std::size_t done, std::size_t total,
                          std::size_t failed, std::chrono::milliseconds elapsed);
// The line of a phase that ended: "forks 200/200, 2 failed, done in 1.2s" or, when it stopped
// short (interrupted, or a failure ended the run), "forks 81/200, stopped after 0.4s".
std::string phase_end_line(std::string_view phase, std::size_t done, std::size_t total,
                           std::size_t failed, std::chrono::milliseconds elapsed);
// One event as the JSON line of --progress json (without the newline):
// {"event":"phase_started","phase":"forks","total":64}
// {"event":"item","phase":"forks","item":"run-1","status":"created","done":1,"failed":0,
//  "total":64,"request_id":"…"|null}
// {"event":"phase_ended","phase":"forks","done":64,"failed":0,"total":64,"seconds":0.12}
// `elapsed` is the phase's time so far (used by phase_ended only).
std::string progress_json(const ProgressEvent& event, std::chrono::milliseconds elapsed);

}  // namespace tfork::output
