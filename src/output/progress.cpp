// SPDX-License-Identifier: Apache-2.0
#include "tfork/output/progress.hpp"

#include <fmt/format.h>

#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace tfork::output {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Phases this small finish before a person could read a line about them.
constexpr std::size_t k_min_items = 4;
// How often a live line is redrawn while nothing happens (the time left moves), and how much
// it may be redrawn as answers pour in: a person reads a few updates a second, not 64.
constexpr milliseconds k_terminal_tick{1000};
constexpr milliseconds k_terminal_redraw{50};
// cli.md §6: plain lines "every few seconds" in a log, plus one at each phase's end.
constexpr milliseconds k_plain_tick{5000};

milliseconds since(Clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(Clock::now() - start);
}

std::string rate_text(double per_second) {
  return per_second >= 10 ? fmt::format("{:.0f}/s", per_second)
                          : fmt::format("{:.1f}/s", per_second);
}

// What the human sinks know of the phase being drawn.
struct PhaseState {
  std::string name;
  std::size_t total = 0;
  std::size_t done = 0;
  std::size_t failed = 0;
  Clock::time_point started;
  bool running = false;
  bool shown = false;  // big enough to draw
};

// The terminal and plain sinks: a phase's state, and a thread that draws while nothing
// happens. draw_locked() is called under the lock.
class HumanSink : public ProgressSink {
 public:
  HumanSink(std::FILE* out, milliseconds tick) : out_(out), tick_(tick) {}
  ~HumanSink() override { stop_ticking(); }

  void on_event(const ProgressEvent& event) override {
    std::unique_lock lock(mutex_);
    switch (event.kind) {
      case ProgressEvent::Kind::phase_started:
        phase_ = PhaseState{std::string(event.phase),  event.total, 0, 0, Clock::now(), true,
                            event.total >= k_min_items};
        if (phase_.shown) {
          started_locked();
          start_ticking_locked();
        }
        break;
      case ProgressEvent::Kind::item_done:
        phase_.done = event.done;
        phase_.failed = event.failed;
        if (phase_.shown) item_locked();
        break;
      case ProgressEvent::Kind::phase_ended:
        phase_.done = event.done;
        phase_.failed = event.failed;
        phase_.running = false;
        if (phase_.shown) ended_locked();
        break;
    }
  }

  void close() override {
    stop_ticking();
    std::lock_guard lock(mutex_);
    if (!closed_) closed_locked();
    closed_ = true;
  }

 protected:
  virtual void started_locked() = 0;
  virtual void item_locked() = 0;
  virtual void ended_locked() = 0;
  virtual void tick_locked() = 0;
  virtual void closed_locked() {}

  void write_locked(std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), out_);
    std::fflush(out_);
  }

  std::string running_line() const {
    return progress_line(phase_.name, phase_.done, phase_.total, phase_.failed,
                         since(phase_.started));
  }
  std::string end_line() const {
    return phase_end_line(phase_.name, phase_.done, phase_.total, phase_.failed,
                          since(phase_.started));
  }

  PhaseState phase_;

 private:
  void start_ticking_locked() {
    if (ticker_.joinable()) return;
    ticker_ = std::thread([this] {
      std::unique_lock lock(mutex_);
      while (!stopping_) {
        wake_.wait_for(lock, tick_);
        if (!stopping_ && phase_.running && phase_.shown) tick_locked();
      }
    });
  }

  void stop_ticking() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (ticker_.joinable()) ticker_.join();
  }

  std::FILE* out_;
  milliseconds tick_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool closed_ = false;
  std::thread ticker_;
};

// One line, redrawn in place ("\r" and "erase to the end of the line"), never followed by a
// newline: the next phase's line replaces it, and close() erases it.
class TerminalSink final : public HumanSink {
 public:
  explicit TerminalSink(std::FILE* out) : HumanSink(out, k_terminal_tick) {}
  ~TerminalSink() override { close(); }

 private:
  void started_locked() override { draw_locked(running_line()); }
  void item_locked() override {
    // The last item's line is the phase's end (ended_locked); others, a few times a second.
    if (phase_.done >= phase_.total || since(last_draw_) < k_terminal_redraw) return;
    draw_locked(running_line());
  }
  void ended_locked() override { draw_locked(end_line()); }
  void tick_locked() override { draw_locked(running_line()); }
  void closed_locked() override {
    if (drawn_) write_locked("\r\033[K");
    drawn_ = false;
  }
  void draw_locked(const std::string& line) {
    write_locked("\r\033[K" + line);
    drawn_ = true;
    last_draw_ = Clock::now();
  }

  bool drawn_ = false;
  Clock::time_point last_draw_{};
};

// Whole lines for a log: one every k_plain_tick while a phase runs, one when it ends.
class PlainSink final : public HumanSink {
 public:
  explicit PlainSink(std::FILE* out) : HumanSink(out, k_plain_tick) {}
  ~PlainSink() override { close(); }

 private:
  void started_locked() override { last_line_ = Clock::now(); }
  void item_locked() override {
    if (phase_.done < phase_.total && since(last_line_) >= k_plain_tick)
      line_locked(running_line());
  }
  void ended_locked() override { line_locked(end_line()); }
  void tick_locked() override {
    // The ticker wakes every k_plain_tick: a line unless one went out a moment ago.
    if (since(last_line_) >= k_plain_tick * 9 / 10) line_locked(running_line());
  }
  void line_locked(const std::string& line) {
    write_locked("tfork: " + line + "\n");
    last_line_ = Clock::now();
  }

  Clock::time_point last_line_{};
};

class JsonSink final : public ProgressSink {
 public:
  explicit JsonSink(std::FILE* out) : out_(out) {}

  void on_event(const ProgressEvent& event) override {
    if (event.kind == ProgressEvent::Kind::phase_started) started_ = Clock::now();
    const auto line = progress_json(event, since(started_)) + "\n";
    std::lock_guard lock(mutex_);
    std::fwrite(line.data(), 1, line.size(), out_);
    std::fflush(out_);
  }

 private:
  std::FILE* out_;
  std::mutex mutex_;
  Clock::time_point started_ = Clock::now();
};

}  // namespace

std::unique_ptr<ProgressSink> make_progress_sink(ProgressMode mode, std::FILE* out) {
  switch (mode) {
    case ProgressMode::none:
      return nullptr;
    case ProgressMode::terminal:
      return std::make_unique<TerminalSink>(out);
    case ProgressMode::plain:
      return std::make_unique<PlainSink>(out);
    case ProgressMode::json:
      return std::make_unique<JsonSink>(out);
  }
  return nullptr;
}

std::string duration_text(milliseconds duration) {
  const auto ms = std::max<milliseconds::rep>(duration.count(), 0);
  if (ms < 10'000) return fmt::format("{:.1f}s", static_cast<double>(ms) / 1000);
  const auto s = ms / 1000;
  if (s >= 3600) return fmt::format("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

std::string progress_line(std::string_view phase, std::size_t done, std::size_t total,
                          std::size_t failed, milliseconds elapsed) {
  auto line = fmt::format("{} {}/{}", phase, done, total);
  if (failed > 0) line += fmt::format(", {} failed", failed);
  const double seconds = static_cast<double>(elapsed.count()) / 1000;
  if (done == 0 || seconds <= 0) return line + ", " + duration_text(elapsed);
  const double rate = static_cast<double>(done) / seconds;
  const auto left = static_cast<double>(total > done ? total - done : 0) / rate;
  // The time left in whole seconds, rounded up: "ETA 0s" would read as "done".
  const auto eta = static_cast<long long>(std::max(1.0, std::ceil(left)));
  return line + ", " + rate_text(rate) + ", ETA " +
         (eta < 60 ? fmt::format("{}s", eta) : duration_text(std::chrono::seconds(eta)));
}

std::string phase_end_line(std::string_view phase, std::size_t done, std::size_t total,
                           std::size_t failed, milliseconds elapsed) {
  auto line = fmt::format("{} {}/{}", phase, done, total);
  if (failed > 0) line += fmt::format(", {} failed", failed);
  return line + (done < total ? ", stopped after " : ", done in ") + duration_text(elapsed);
}

std::string progress_json(const ProgressEvent& event, milliseconds elapsed) {
  Json line;
  switch (event.kind) {
    case ProgressEvent::Kind::phase_started:
      line = Json{{"event", "phase_started"}, {"phase", event.phase}, {"total", event.total}};
      break;
    case ProgressEvent::Kind::item_done:
      line = Json{{"event", "item"},
                  {"phase", event.phase},
                  {"item", event.item},
                  {"status", status_name(event.status)},
                  {"done", event.done},
                  {"failed", event.failed},
                  {"total", event.total},
                  {"request_id", event.request_id.empty() ? Json() : Json(event.request_id)}};
      break;
    case ProgressEvent::Kind::phase_ended:
      line =
          Json{{"event", "phase_ended"}, {"phase", event.phase},
               {"done", event.done},     {"failed", event.failed},
               {"total", event.total},   {"seconds", static_cast<double>(elapsed.count()) / 1000}};
      break;
  }
  // Names come from the command line or a server: never raw control characters on a terminal.
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tfork::output
