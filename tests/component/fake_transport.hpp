// SPDX-License-Identifier: Apache-2.0
#pragma once
// A recording fake transport for component tests: it keeps every request exactly as the
// client would send it, and answers with a function of the test's choosing. Like the curl
// transport, it may report completions out of input order (`complete_in_reverse`), which the
// contract of Transport::send_batch allows (tfork/http/transport.hpp).

#include "tfork/http/transport.hpp"

#include <algorithm>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tfork::testing {

class FakeTransport : public http::Transport {
 public:
  using Responder = std::function<http::Result(const http::Request&)>;

  explicit FakeTransport(Responder responder = {}) : responder_(std::move(responder)) {
    if (!responder_)
      responder_ = [](const http::Request&) { return http::Response{200, {}, {}, 1}; };
  }

  // Keeps the contract of Transport::send_batch: every request taken is answered once, on
  // this thread. The requests ready at once (at most max_parallel with `honour_window`) are
  // sent in order, then answered (in reverse with `complete_in_reverse`); a batch that holds
  // requests back until a time is waited for.
  void send_batch(http::Batch& batch, std::size_t max_parallel) override {
    widest_window = std::max(widest_window, max_parallel);
    while (true) {
      std::vector<std::pair<std::size_t, http::Result>> answered;
      while (!(honour_window && answered.size() >= max_parallel)) {
        const auto ready = batch.next();
        if (!ready) break;
        std::lock_guard lock(mutex_);
        requests.push_back(*ready->request);
        answered.emplace_back(ready->id, responder_(*ready->request));
      }
      if (complete_in_reverse) std::reverse(answered.begin(), answered.end());
      for (auto& [id, result] : answered)
        batch.done(id, std::move(result));
      if (!answered.empty()) continue;
      const auto wake = batch.next_ready_at();
      if (batch.exhausted() || !wake) return;
      std::this_thread::sleep_until(*wake);
    }
  }

  std::vector<http::Request> requests;
  std::size_t widest_window = 0;     // the largest max_parallel of any batch
  bool complete_in_reverse = false;  // report the last request of a batch done first
  bool honour_window = false;        // send at most max_parallel requests a round

 private:
  Responder responder_;
  std::mutex mutex_;
};

}  // namespace tfork::testing
