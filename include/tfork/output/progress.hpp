// SPDX-License-Identifier: Apache-2.0
#pragma once
// Progress of a batch on stderr (issue 11): on a terminal, one line redrawn in place with the
// items done of the total, the failures and the elapsed time, ticking every second while
// nothing finishes. Nothing at all when stderr is not a terminal (a log file or a CI job reads
// the result, not a stream of counters), when disabled (--quiet, --no-progress), or for a
// batch too small to need one.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace tfork::output {

// "forks 3/10, 1 failed, 4s" (the failures only when there are some; elapsed as 4s, 2m05s,
// 1h02m03s).
std::string progress_line(std::string_view label, std::size_t done, std::size_t total,
                          std::size_t failed, std::chrono::seconds elapsed);

// Whether a batch shows progress: enabled (not -q / --no-progress), stderr a terminal, and
// at least a few items.
bool progress_wanted(bool enabled, bool stderr_is_terminal, std::size_t total);

class Progress {
 public:
  Progress(std::string label, std::size_t total, bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void advance(bool ok);  // any thread
  void finish();          // the last redraw, then a newline; idempotent

 private:
  void draw_locked(bool final);

  std::string label_;
  std::size_t total_;
  std::size_t done_ = 0;
  std::size_t failed_ = 0;
  bool shown_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable stop_;
  std::thread ticker_;  // redraws once a second so the elapsed time moves
};

}  // namespace tfork::output
