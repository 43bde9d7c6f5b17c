// SPDX-License-Identifier: Apache-2.0
#include "tfork/mcp/stdio.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <mutex>
#include <poll.h>
#include <string>
#include <unistd.h>

namespace tfork::mcp {
namespace {

// How often a reader blocked on a quiet stdin looks at the interrupt flag.
constexpr int k_poll_ms = 200;

class LineWriter final : public Channel {
 public:
  explicit LineWriter(int fd) : fd_(fd) {}
  void send(const Json& message) override {
    auto line = wire_text(message);
    line += '\n';
    std::lock_guard lock(mutex_);
    if (closed_) return;
    std::size_t written = 0;
    while (written < line.size()) {
      const auto n = ::write(fd_, line.data() + written, line.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        closed_ = true;
        return;
      }
      written += static_cast<std::size_t>(n);
    }
  }
  bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }

 private:
  int fd_;
  mutable std::mutex mutex_;
  bool closed_ = false;
};

}  // namespace

StdioEnd serve_stdio(Session& session, int input, int output,
                     const std::atomic<bool>& interrupted) {
  auto writer = std::make_shared<LineWriter>(output);
  std::string line;
  bool discarding = false;  // the current line passed the limit: drop the rest of it
  char buffer[64 * 1024];
  auto end = StdioEnd::eof;
  auto deliver = [&] {
    if (discarding) {
      session.refuse(fmt::format("the message is larger than {} MiB", k_max_message_bytes >> 20),
                     writer);
    } else {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") != std::string::npos) session.receive(line, writer);
    }
    line.clear();
    line.shrink_to_fit();
    discarding = false;
  };
  for (;;) {
    if (interrupted.load()) {
      end = StdioEnd::interrupted;
      break;
    }
    if (writer->closed()) {
      end = StdioEnd::output_closed;
      break;
    }
    pollfd waiting{input, POLLIN, 0};
    const int ready = ::poll(&waiting, 1, k_poll_ms);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const auto n = ::read(input, buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // end of file, or stdin is gone
    std::string_view chunk(buffer, static_cast<std::size_t>(n));
    while (!chunk.empty()) {
      const auto newline = chunk.find('\n');
      const auto piece = chunk.substr(0, newline);
      if (!discarding) {
        if (line.size() + piece.size() > k_max_message_bytes) {
          discarding = true;
          line.clear();
          line.shrink_to_fit();
        } else {
          line.append(piece);
        }
      }
      if (newline == std::string_view::npos) break;
      deliver();
      chunk.remove_prefix(newline + 1);
    }
  }
  // A last message without its newline is still a message.
  if (end == StdioEnd::eof && (!line.empty() || discarding)) deliver();
  if (end != StdioEnd::eof) session.cancel_all();
  // After end of file the calls in flight finish and answer (the client may still read), unless
  // a signal comes meanwhile.
  session.wait_idle(&interrupted);
  return end;
}

}  // namespace tfork::mcp
