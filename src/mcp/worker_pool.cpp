// SPDX-License-Identifier: Apache-2.0
#include "tfork/mcp/worker_pool.hpp"

namespace tfork::mcp {

WorkerPool::WorkerPool(std::size_t threads, std::size_t max_waiting, std::size_t max_waiting_bytes)
    : max_waiting_(max_waiting), max_waiting_bytes_(max_waiting_bytes) {
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i)
    threads_.emplace_back([this] { work(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    waiting_.clear();
    waiting_bytes_ = 0;
  }
  wake_.notify_all();
  for (auto& thread : threads_)
    thread.join();
}

bool WorkerPool::submit(std::function<void()> job, std::size_t bytes) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ || waiting_.size() >= max_waiting_ ||
        (!waiting_.empty() && waiting_bytes_ + bytes > max_waiting_bytes_))
      return false;
    waiting_.push_back(Job{std::move(job), bytes});
    waiting_bytes_ += bytes;
  }
  wake_.notify_one();
  return true;
}

void WorkerPool::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return waiting_.empty() && running_ == 0; });
}

void WorkerPool::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !waiting_.empty(); });
    if (waiting_.empty()) return;  // stopping, nothing left
    auto job = std::move(waiting_.front());
    waiting_.pop_front();
    waiting_bytes_ -= job.bytes;
    ++running_;
    lock.unlock();
    job.run();
    job.run = nullptr;  // what the job held goes before the next one starts
    lock.lock();
    --running_;
    if (waiting_.empty() && running_ == 0) idle_.notify_all();
  }
}

}  // namespace tfork::mcp
