// SPDX-License-Identifier: Apache-2.0
#pragma once
// Room kept on the data directory's disk for the writes that free space (issue 24 §2.1). On a
// full disk SQLite cannot even write the WAL frames of a DELETE, so a store that let data fill
// the disk could no longer be emptied through its API. A file of `size` bytes holds that room:
// new data is admitted only while the reserve is in place and as much again is free; once
// the disk is that full, the file is unlinked and its space is left to deletes and
// checkpoints. It is made again once the disk has room for it twice over.
//
// The disk's free space is measured (statvfs) afresh for every decision near full, and
// otherwise at most once per k_fresh: a busy server far from full decides its many small
// writes on one figure less the bytes it admitted since (each PUT measured it four times,
// under this one mutex). A disk that another process fills is noticed within k_fresh; a write
// admitted in between fails at the disk as 507 like any other, and the reserve's blocks stay
// kept for deletes whatever the figure said.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>

namespace tfork::store {

class SpaceReserve {
 public:
  using Clock = std::chrono::steady_clock;
  // How the disk is seen: its free bytes (for this process), and the time. Tests give their own.
  struct Probe {
    std::function<std::int64_t(const std::filesystem::path& directory)> free_bytes;
    std::function<Clock::time_point()> now;
    static Probe system();
  };
  // A figure this old is measured again.
  static constexpr auto k_fresh = std::chrono::milliseconds(50);
  // A decision that would leave less than this above the reserve is made on a fresh figure.
  static constexpr std::int64_t k_close = std::int64_t{64} << 20;

  // size 0: no reserve, every write of data is admitted.
  SpaceReserve(std::filesystem::path file, std::int64_t size, Probe probe = Probe::system());

  // At open, before the database: keeps or makes the reserve when there is room, and
  // releases it when the disk is already full (a start on a full disk still serves deletes).
  void settle();
  // Whether a write that adds `bytes` of data may go ahead. Releases the reserve when the
  // disk is nearly full; a body too big for the room left is refused and releases nothing.
  bool admit_data(std::int64_t bytes = 0);
  // Gives the reserve's space to a write that frees space and failed for want of it; true
  // when there was a reserve to give (the write is worth trying again).
  bool release();
  // After a write that freed space: the reserve is made again when there is room for it.
  void restore();

 private:
  std::int64_t measure_locked();  // a fresh figure, remembered
  // The free bytes to decide a write of `bytes` on: the remembered figure less what was
  // admitted since, unless it is stale or the decision is close (then measured afresh).
  std::int64_t free_locked(std::int64_t bytes);
  bool make_locked();  // true when the reserve is in place afterwards
  void release_locked();

  std::filesystem::path file_;
  std::int64_t size_;
  Probe probe_;
  std::mutex mu_;
  bool present_ = false;
  bool released_ = false;                         // since it was last made: data is being refused
  std::int64_t measured_ = 0;                     // free bytes at measured_at_
  std::int64_t admitted_since_ = 0;               // bytes of data admitted since
  std::optional<Clock::time_point> measured_at_;  // none: measure before the next decision
};

}  // namespace tfork::store
