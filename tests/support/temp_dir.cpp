// SPDX-License-Identifier: Apache-2.0
#include "temp_dir.hpp"

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <stdlib.h>

#if __has_include(<catch2/catch_all.hpp>)  // Catch2 v3
#include <catch2/catch_all.hpp>
#else  // Catch2 v2: listeners need its external interfaces
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>
#endif

namespace tfork::test {
namespace {

std::atomic<long> g_failed{0};

#if __has_include(<catch2/catch_all.hpp>)
struct FailureCounter : Catch::EventListenerBase {
  using EventListenerBase::EventListenerBase;
  void assertionEnded(const Catch::AssertionStats& stats) override {
    if (!stats.assertionResult.isOk()) ++g_failed;
  }
};
#else
struct FailureCounter : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  bool assertionEnded(const Catch::AssertionStats& stats) override {
    if (!stats.assertionResult.isOk()) ++g_failed;
    return true;
  }
};
#endif

}  // namespace

CATCH_REGISTER_LISTENER(FailureCounter)

long failed_assertions() noexcept {
  return g_failed.load();
}

TempDir::TempDir(const std::string& tag) : failures_before_(failed_assertions()) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      (std::filesystem::path(tmp && *tmp ? tmp : "/tmp") / (tag + ".XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("mkdtemp " + pattern + " failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  // A failed REQUIRE is counted before it throws, so one unwinding through here is seen too.
  if (failed_assertions() != failures_before_) {
    std::cerr << "kept the failed test's directory " << path_.string() << "\n";
    return;
  }
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace tfork::test
