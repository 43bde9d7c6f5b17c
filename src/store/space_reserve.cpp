// SPDX-License-Identifier: Apache-2.0
#include "space_reserve.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <utility>

namespace tfork::store {

SpaceReserve::Probe SpaceReserve::Probe::system() {
  return Probe{[](const std::filesystem::path& directory) -> std::int64_t {
                 struct statvfs st {};
                 // Unknown: as if the disk had room, so that a filesystem without statvfs
                 // keeps working.
                 if (::statvfs(directory.c_str(), &st) != 0) return INT64_MAX / 4;
                 return static_cast<std::int64_t>(st.f_bavail) *
                        static_cast<std::int64_t>(st.f_frsize);
               },
               [] { return Clock::now(); }};
}

SpaceReserve::SpaceReserve(std::filesystem::path file, std::int64_t size, Probe probe)
    : file_(std::move(file)), size_(size), probe_(std::move(probe)) {}

std::int64_t SpaceReserve::measure_locked() {
  measured_ = probe_.free_bytes(file_.parent_path());
  measured_at_ = probe_.now();
  admitted_since_ = 0;
  return measured_;
}

std::int64_t SpaceReserve::free_locked(std::int64_t bytes) {
  const auto estimate = measured_ - admitted_since_;
  const bool fresh = measured_at_ && probe_.now() - *measured_at_ < k_fresh;
  if (fresh && estimate - size_ - bytes >= k_close) return estimate;
  return measure_locked();
}

bool SpaceReserve::make_locked() {
  if (present_) return true;
  // Twice over: after it is made, a reserve's worth is still free for data.
  if (measure_locked() < 2 * size_) return false;
  const int fd = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  // Allocated, not sparse: the blocks must be there to give back.
  const int rc = ::posix_fallocate(fd, 0, size_);
  ::close(fd);
  if (rc != 0) {
    ::unlink(file_.c_str());
    return false;
  }
  present_ = true;
  measured_at_.reset();  // its blocks are taken now
  if (std::exchange(released_, false)) {
    spdlog::info("store: the disk has room again; new data is accepted");
  }
  return true;
}

void SpaceReserve::release_locked() {
  if (!present_) return;
  ::unlink(file_.c_str());
  present_ = false;
  released_ = true;
  measured_at_.reset();  // its blocks are free now
  spdlog::warn(
      "store: the disk of {} is nearly full: new data is refused until space is freed; deletes "
      "go on in the {} MiB it kept",
      file_.parent_path().string(), size_ >> 20);
}

void SpaceReserve::settle() {
  if (size_ <= 0) return;
  std::lock_guard lock(mu_);
  struct stat st {};
  if (::stat(file_.c_str(), &st) == 0 && st.st_size == size_ &&
      st.st_blocks * 512 >= static_cast<std::int64_t>(size_)) {
    present_ = true;
    if (measure_locked() < size_) release_locked();
    return;
  }
  ::unlink(file_.c_str());  // a partial one, from a crash while making it
  if (!make_locked()) {
    released_ = true;
    spdlog::warn("store: the disk of {} is nearly full: new data is refused until space is freed",
                 file_.parent_path().string());
  }
}

bool SpaceReserve::admit_data(std::int64_t bytes) {
  if (size_ <= 0) return true;
  std::lock_guard lock(mu_);
  if (!make_locked()) return false;
  const auto free = free_locked(bytes);
  if (free < size_) {
    release_locked();
    return false;
  }
  if (free - size_ < bytes) return false;
  admitted_since_ += bytes;
  return true;
}

bool SpaceReserve::release() {
  if (size_ <= 0) return false;
  std::lock_guard lock(mu_);
  const bool had = present_;
  release_locked();
  return had;
}

void SpaceReserve::restore() {
  if (size_ <= 0) return;
  std::lock_guard lock(mu_);
  make_locked();
}

}  // namespace tfork::store
