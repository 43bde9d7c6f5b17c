// SPDX-License-Identifier: Apache-2.0
#pragma once
// Content-addressed immutable blob files (server-design.md §6.1, §6.6 step 4, §6.7 blob
// sweep): blobs/ab/cd/<sha256hex>, written to tmp/ first and renamed into place, so a blob
// file is always complete. Deduplicated by name; reference counts live in meta.db.

#include "tfork/store/store.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tfork::store {

class BlobFiles {
 public:
  BlobFiles(std::filesystem::path root, Durability durability);

  const std::filesystem::path& tmp_dir() const noexcept { return tmp_; }
  std::filesystem::path path_of(std::string_view hash) const;
  bool exists(std::string_view hash) const;

  // Hashes `content` and stores it (fsync per durability). Throws std::system_error.
  BlobRef write(std::string_view content);
  // Moves a finished file (same filesystem) into place under `hash`. Throws std::system_error.
  BlobRef adopt(const std::filesystem::path& file, std::string_view hash);

  // A blob is "pinned" from write/adopt until a row references it (release) so that a
  // concurrent delete that drops the same content's last reference does not unlink the file
  // between write_blob and put_object (§6.7: unreferenced files younger than a grace period
  // are kept). Pins that are never released expire after k_pin_grace.
  void release(std::string_view hash);
  // Unlinks files whose last reference was just dropped (called after COMMIT, under the
  // writer lock), skipping pinned ones: a put in flight will reference them.
  void remove_unreferenced(const std::vector<std::string>& hashes);

  // Startup (§6.7): empties tmp/ and unlinks every blob file for which `referenced` is false.
  // Returns the number of orphan files removed.
  std::size_t sweep(const std::function<bool(std::string_view hash)>& referenced);

  static constexpr std::chrono::minutes k_pin_grace{60};

 private:
  BlobRef place(const std::filesystem::path& file, std::string_view hash, std::int64_t size);
  void prune_pins_locked(std::chrono::steady_clock::time_point now);

  struct Pin {
    int count = 0;
    std::chrono::steady_clock::time_point last;
  };

  std::filesystem::path blobs_;
  std::filesystem::path tmp_;
  Durability durability_;
  std::mutex mu_;  // pins_ and the exists-or-rename decision vs. unlinking
  std::unordered_map<std::string, Pin> pins_;
  std::size_t writes_since_prune_ = 0;
};

// fsync helpers (no-ops where durability says so).
void fsync_file(const std::filesystem::path& file);
void fsync_dir(const std::filesystem::path& dir);

}  // namespace tfork::store
