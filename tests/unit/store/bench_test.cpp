// SPDX-License-Identifier: Apache-2.0
// Hidden benchmarks of the server-design.md §7 targets (run with `unit_store "[.bench]"`,
// ideally from a Release build). They print timings and assert nothing about time, so a
// loaded machine can never fail the suite.

#include <catch2/catch.hpp>

#include "store_test_support.hpp"
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace tfork::store::test {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Puts `count` keys sharing one blob (metadata cost only), "key-000000" ... in key order.
void fill(Store& store, std::string_view bucket, int count, std::string_view tag) {
  auto blob = store.write_blob(tag);
  REQUIRE(blob);
  char key[32];
  for (int i = 0; i < count; ++i) {
    std::snprintf(key, sizeof key, "key-%06d", i);
    NewObject object;
    object.etag = std::string(tag);
    object.parts = {*blob};
    REQUIRE(store.put_object(bucket, key, std::move(object)));
  }
}

double median_fork_ms(Store& store, std::string_view source, std::string_view prefix) {
  std::vector<double> times;
  for (int i = 0; i < 21; ++i) {
    const auto start = Clock::now();
    REQUIRE(store.create_fork(std::string(prefix) + std::to_string(i), source, std::nullopt));
    times.push_back(ms_since(start));
  }
  std::ranges::sort(times);
  return times[times.size() / 2];
}

TEST_CASE("bench: fork and snapshot creation do not grow with object count", "[.bench]") {
  TempDir dir;
  auto store = open_store(dir.path(), Durability::normal);
  REQUIRE(store->create_bucket("small", true));
  REQUIRE(store->create_bucket("large", true));
  fill(*store, "small", 10, "s");
  fill(*store, "large", 100'000, "l");
  const double small = median_fork_ms(*store, "small", "fs-");
  const double large = median_fork_ms(*store, "large", "fl-");
  auto start = Clock::now();
  REQUIRE(store->take_snapshot("large", std::nullopt));
  const double snapshot = ms_since(start);
  std::printf("fork median: %.3f ms at 10 objects, %.3f ms at 100000; snapshot %.3f ms\n", small,
              large, snapshot);
}

TEST_CASE("bench: a 1000-key page through a 3-level fork chain", "[.bench]") {
  TempDir dir;
  auto store = open_store(dir.path(), Durability::off);
  REQUIRE(store->create_bucket("base", true));
  fill(*store, "base", 100'000, "b");
  REQUIRE(store->create_fork("l1", "base", std::nullopt));
  // 10% overwritten and 10% deleted in the middle layer, as in the §3.2 prototype.
  auto blob = store->write_blob("l1");
  REQUIRE(blob);
  char key[32];
  for (int i = 0; i < 100'000; i += 10) {
    std::snprintf(key, sizeof key, "key-%06d", i);
    NewObject object;
    object.parts = {*blob};
    REQUIRE(store->put_object("l1", key, object));
    std::snprintf(key, sizeof key, "key-%06d", i + 5);
    REQUIRE(store->delete_object("l1", key));
  }
  REQUIRE(store->create_fork("l2", "l1", std::nullopt));
  std::vector<double> times;
  ListQuery query;
  query.max_keys = 1000;
  std::size_t keys = 0;
  const auto all = Clock::now();
  while (true) {
    const auto start = Clock::now();
    auto page = store->list_objects("l2", query);
    times.push_back(ms_since(start));
    REQUIRE(page);
    keys += page->objects.size();
    if (!page->truncated) break;
    query.after = page->last;
  }
  const double total = ms_since(all);
  std::ranges::sort(times);
  std::printf(
      "list page (1000 keys, 3 layers): median %.3f ms, max %.3f ms; %zu keys in %.0f ms"
      " (%.0f keys/s)\n",
      times[times.size() / 2], times.back(), keys, total, keys / (total / 1000));
  CHECK(keys == 90'000);
}

TEST_CASE("bench: small PUTs per second (4 KiB, durability normal, 8 threads)", "[.bench]") {
  TempDir dir;
  auto store = open_store(dir.path(), Durability::normal);
  REQUIRE(store->create_bucket("p", true));
  constexpr int k_threads = 8;
  constexpr int k_per_thread = 250;
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < k_threads; ++t) {
    threads.emplace_back([&, t] {
      std::string body(4096, 'x');
      for (int i = 0; i < k_per_thread; ++i) {
        const std::string key = std::to_string(t) + "/" + std::to_string(i);
        body.replace(0, key.size(), key);  // distinct content: no dedup
        auto blob = store->write_blob(body);
        NewObject object;
        if (blob) object.parts = {*blob};
        if (blob) (void)store->put_object("p", key, object);
      }
    });
  }
  for (auto& thread : threads)
    thread.join();
  const double ms = ms_since(start);
  std::printf("small PUTs: %d in %.0f ms = %.0f/s\n", k_threads * k_per_thread, ms,
              k_threads * k_per_thread / (ms / 1000));
}

}  // namespace
}  // namespace tfork::store::test
