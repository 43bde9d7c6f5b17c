// SPDX-License-Identifier: Apache-2.0
#pragma once
// A cpp-httplib server on 127.0.0.1 (port 0) for the transport tests, run in its own thread.
// Every method goes to one handler; handlers that must hang wait on hang() until the test
// (or the destructor) calls release(), so no server thread outlives its test.

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

namespace tfork::http::testing {

class TestServer {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  explicit TestServer(Handler handler) : handler_(std::move(handler)) {
    // Enough workers that hanging handlers and idle keep-alive connections never starve
    // each other (one worker serves one connection).
    server_.new_task_queue = [] { return new httplib::ThreadPool(24); };
    // Keep connections open so that the tests see the client's reuse, not the server's limits.
    server_.set_keep_alive_max_count(100000);
    server_.set_keep_alive_timeout(10);
    auto route = [this](const httplib::Request& request, httplib::Response& response) {
      handler_(request, response);
    };
    // The pattern is matched against the decoded path; every path goes to the one handler.
    // HEAD requests are served by the GET route.
    server_.Get(".*", route);
    server_.Put(".*", route);
    server_.Post(".*", route);
    server_.Delete(".*", route);
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw std::runtime_error("cannot bind a test server on 127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }

  ~TestServer() {
    release();
    server_.stop();
    thread_.join();
  }

  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  int port() const { return port_; }
  std::string url(std::string_view target) const {
    return "http://127.0.0.1:" + std::to_string(port_) + std::string(target);
  }

  // Blocks a handler until release() (bounded, so a broken test cannot hang forever).
  void hang() {
    std::unique_lock lock(mutex_);
    released_cv_.wait_for(lock, std::chrono::seconds(30), [this] { return released_; });
  }

  void release() {
    {
      const std::lock_guard lock(mutex_);
      released_ = true;
    }
    released_cv_.notify_all();
  }

 private:
  Handler handler_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable released_cv_;
  bool released_ = false;
};

}  // namespace tfork::http::testing
