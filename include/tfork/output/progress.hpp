#pragma once
// Progress of a batch on stderr (cli.md §6): one redrawn line on a TTY, a plain line every
// few seconds otherwise, nothing when disabled (--quiet, --no-progress) or for small batches.

#include <chrono>
#include <cstddef>
#include <string>

namespace tfork::output {

class Progress {
 public:
  Progress(std::string label, std::size_t total, bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void advance(bool ok);
  void finish();  // final line (TTY: ends the redrawn line)

 private:
  void draw(bool final);

  std::string label_;
  std::size_t total_;
  std::size_t done_ = 0;
  std::size_t failed_ = 0;
  bool enabled_;
  bool tty_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace tfork::output
