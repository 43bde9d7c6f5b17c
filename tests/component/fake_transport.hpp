// SPDX-License-Identifier: Apache-2.0
#pragma once
// A recording fake transport for component tests: it keeps every request exactly as the
// client would send it, and answers with a function of the test's choosing. Like the curl
// transport, send_all may report completions out of input order (`complete_in_reverse`);
// the returned vector is always in input order (tfork/http/transport.hpp).

#include "tfork/http/transport.hpp"

#include <functional>
#include <mutex>
#include <vector>

namespace tfork::testing {

class FakeTransport : public http::Transport {
 public:
  using Responder = std::function<http::Result(const http::Request&)>;

  explicit FakeTransport(Responder responder = {}) : responder_(std::move(responder)) {
    if (!responder_)
      responder_ = [](const http::Request&) { return http::Response{200, {}, {}, 1}; };
  }

  http::Result send(const http::Request& request) override {
    std::lock_guard lock(mutex_);
    requests.push_back(request);
    return responder_(request);
  }

  std::vector<http::Result> send_all(
      std::span<const http::Request> batch, std::size_t max_parallel,
      const std::function<void(std::size_t, const http::Result&)>& on_done) override {
    last_max_parallel = max_parallel;
    std::vector<http::Result> results;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      results.push_back(send(batch[i]));
      if (on_done && !complete_in_reverse) on_done(i, results.back());
    }
    if (on_done && complete_in_reverse)
      for (std::size_t i = batch.size(); i-- > 0;)
        on_done(i, results[i]);
    return results;
  }

  std::vector<http::Request> requests;
  std::size_t last_max_parallel = 0;
  bool complete_in_reverse = false;  // report the last request of a batch done first

 private:
  Responder responder_;
  std::mutex mutex_;
};

}  // namespace tfork::testing
