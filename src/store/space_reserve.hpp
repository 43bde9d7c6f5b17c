// SPDX-License-Identifier: Apache-2.0
#pragma once
// Room kept on the data directory's disk for the writes that free space (issue 24 §2.1). On a
// full disk SQLite cannot even write the WAL frames of a DELETE, so a store that let data fill
// the disk could no longer be emptied through its API. A file of `size` bytes holds that room:
// new data is admitted only while the reserve is in place and as much again is free; once
// the disk is that full, the file is unlinked and its space is left to deletes and
// checkpoints. It is made again once the disk has room for it twice over.

#include <cstdint>
#include <filesystem>
#include <mutex>

namespace tfork::store {

class SpaceReserve {
 public:
  // size 0: no reserve, every write of data is admitted.
  SpaceReserve(std::filesystem::path file, std::int64_t size);

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
  std::int64_t free_bytes() const;  // what this process may still allocate on the disk
  bool make_locked();               // true when the reserve is in place afterwards
  void release_locked();

  std::filesystem::path file_;
  std::int64_t size_;
  std::mutex mu_;
  bool present_ = false;
  bool released_ = false;  // since it was last made: data is being refused
};

}  // namespace tfork::store
