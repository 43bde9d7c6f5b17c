// SPDX-License-Identifier: Apache-2.0
#include "tfork/output/progress.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <unistd.h>

namespace tfork::output {
namespace {
// Batches this small finish before a person could read a progress line.
constexpr std::size_t k_min_items = 4;
constexpr auto k_tick = std::chrono::seconds(1);
}  // namespace

std::string progress_line(std::string_view label, std::size_t done, std::size_t total,
                          std::size_t failed, std::chrono::seconds elapsed) {
  const auto s = elapsed.count();
  std::string time;
  if (s >= 3600)
    time = fmt::format("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60);
  else if (s >= 60)
    time = fmt::format("{}m{:02}s", s / 60, s % 60);
  else
    time = fmt::format("{}s", s);
  return fmt::format("{} {}/{}{}, {}", label, done, total,
                     failed ? fmt::format(", {} failed", failed) : std::string(), time);
}

bool progress_wanted(bool enabled, bool stderr_is_terminal, std::size_t total) {
  return enabled && stderr_is_terminal && total >= k_min_items;
}

Progress::Progress(std::string label, std::size_t total, bool enabled)
    : label_(std::move(label)),
      total_(total),
      shown_(progress_wanted(enabled, ::isatty(STDERR_FILENO) == 1, total)),
      start_(std::chrono::steady_clock::now()) {
  if (!shown_) return;
  {
    std::lock_guard lock(mutex_);
    draw_locked(false);
  }
  ticker_ = std::thread([this] {
    std::unique_lock ticking(mutex_);
    while (!finished_) {
      stop_.wait_for(ticking, k_tick);
      if (!finished_) draw_locked(false);
    }
  });
}

Progress::~Progress() {
  finish();
}

void Progress::advance(bool ok) {
  std::lock_guard lock(mutex_);
  ++done_;
  if (!ok) ++failed_;
  if (shown_ && !finished_) draw_locked(false);
}

void Progress::finish() {
  {
    std::lock_guard lock(mutex_);
    if (finished_) return;
    finished_ = true;
    if (shown_) draw_locked(true);
  }
  stop_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

void Progress::draw_locked(bool final) {
  const auto elapsed =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start_);
  const auto text = progress_line(label_, done_, total_, failed_, elapsed);
  // \r and "erase to end of line" redraw in place; the final draw ends the line.
  std::fprintf(stderr, "\r\033[K%s%s", text.c_str(), final ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace tfork::output
