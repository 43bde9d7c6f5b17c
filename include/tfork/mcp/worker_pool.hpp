// SPDX-License-Identifier: Apache-2.0
#pragma once
// The threads that run tool calls, so that the thread reading the client stays free to read
// a notifications/cancelled while a call runs. The queue is bounded in calls and in bytes:
// a client that floods the server gets "busy" answers, not an ever-growing queue.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tfork::mcp {

class WorkerPool {
 public:
  // `threads` run jobs; at most `max_waiting` jobs holding `max_waiting_bytes` wait for one.
  WorkerPool(std::size_t threads, std::size_t max_waiting, std::size_t max_waiting_bytes);
  ~WorkerPool();  // waits for the running jobs, drops the waiting ones
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `job` (any thread); false, and `job` dropped, when the queue is full. `bytes` is
  // what the job holds (its arguments), counted against max_waiting_bytes until it starts.
  bool submit(std::function<void()> job, std::size_t bytes);
  // Until no job runs or waits.
  void wait_idle();

 private:
  struct Job {
    std::function<void()> run;
    std::size_t bytes;
  };
  void work();

  std::size_t max_waiting_;
  std::size_t max_waiting_bytes_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<Job> waiting_;
  std::size_t waiting_bytes_ = 0;
  std::size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tfork::mcp
