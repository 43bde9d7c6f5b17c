// SPDX-License-Identifier: Apache-2.0
#pragma once
// The C++ tests' one temporary-directory fixture: a fresh directory per use, removed when it
// goes out of scope, or kept, with its path printed, when an assertion failed while it lived
// (what a failed test left behind is what one wants to look at).

#include <filesystem>
#include <string>

namespace tfork::test {

class TempDir {
 public:
  // Made under $TMPDIR (else /tmp) as `<tag>.XXXXXX`.
  explicit TempDir(const std::string& tag = "tfork-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
  long failures_before_;
};

// How many assertions have failed so far in this test run (counted by a Catch2 listener).
long failed_assertions() noexcept;

}  // namespace tfork::test
