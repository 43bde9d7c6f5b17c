#include "tfork/output/progress.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <unistd.h>

namespace tfork::output {
namespace {
// Batches this small finish before a person could read a progress line.
constexpr std::size_t k_min_items = 4;
constexpr auto k_plain_interval = std::chrono::seconds(2);
}  // namespace

Progress::Progress(std::string label, std::size_t total, bool enabled)
    : label_(std::move(label)),
      total_(total),
      enabled_(enabled && total >= k_min_items),
      tty_(::isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() {
  finish();
}

void Progress::advance(bool ok) {
  ++done_;
  if (!ok) ++failed_;
  draw(false);
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  draw(true);
}

void Progress::draw(bool final) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const auto text = fmt::format("{} {}/{}{}", label_, done_, total_,
                                failed_ ? fmt::format(" ({} failed)", failed_) : "");
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s%s", text.c_str(), final ? "\n" : "");
  } else if (final || now - last_draw_ >= k_plain_interval) {
    if (final && last_draw_ == std::chrono::steady_clock::time_point{} && done_ == total_) {
      // Nothing was printed yet and the batch is done: one line says it all.
    }
    std::fprintf(stderr, "%s\n", text.c_str());
    last_draw_ = now;
  }
  std::fflush(stderr);
}

}  // namespace tfork::output
