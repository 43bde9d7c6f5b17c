// SPDX-License-Identifier: Apache-2.0
#include "blob_files.hpp"

#include "tfork/crypto/hash.hpp"

#include <cerrno>
#include <fcntl.h>
#include <system_error>
#include <unistd.h>

namespace tfork::store {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const noexcept { return fd_; }
  void close_checked(const std::string& what) {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw_errno("close " + what);
  }

 private:
  int fd_;
};

// create_directories, plus (with full durability) an fsync of every parent whose entry
// list changed, so a renamed blob's directory chain survives power loss.
void make_dirs(const fs::path& dir, Durability durability) {
  if (fs::is_directory(dir)) return;
  make_dirs(dir.parent_path(), durability);
  std::error_code ec;
  fs::create_directory(dir, ec);
  if (ec) throw std::system_error(ec, "mkdir " + dir.string());
  if (durability == Durability::full) fsync_dir(dir.parent_path());
}

}  // namespace

void fsync_file(const fs::path& file) {
  Fd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) throw_errno("open " + file.string());
  if (::fsync(fd.get()) != 0) throw_errno("fsync " + file.string());
}

void fsync_dir(const fs::path& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) throw_errno("open " + dir.string());
  if (::fsync(fd.get()) != 0) throw_errno("fsync " + dir.string());
}

BlobFiles::BlobFiles(fs::path root, Durability durability)
    : blobs_(root / "blobs"), tmp_(root / "tmp"), durability_(durability) {
  make_dirs(blobs_, durability_);
  make_dirs(tmp_, durability_);
}

fs::path BlobFiles::path_of(std::string_view hash) const {
  // Two levels of 256 fan-out keep directories small at millions of blobs (§6.1).
  return blobs_ / hash.substr(0, 2) / hash.substr(2, 2) / hash;
}

bool BlobFiles::exists(std::string_view hash) const {
  std::error_code ec;
  return fs::is_regular_file(path_of(hash), ec);
}

BlobRef BlobFiles::write(std::string_view content) {
  const fs::path file = tmp_ / crypto::random_hex(16);
  {
    Fd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (fd.get() < 0) throw_errno("create " + file.string());
    std::string_view rest = content;
    while (!rest.empty()) {
      const ssize_t n = ::write(fd.get(), rest.data(), rest.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        const int saved = errno;
        fs::remove(file);
        throw std::system_error(saved, std::generic_category(), "write " + file.string());
      }
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
    // §6.6 step 4: the blob is durable before any row names it.
    if (durability_ != Durability::off && ::fsync(fd.get()) != 0) throw_errno("fsync");
    fd.close_checked(file.string());
  }
  return place(file, crypto::sha256_hex(content), static_cast<std::int64_t>(content.size()));
}

BlobRef BlobFiles::adopt(const fs::path& file, std::string_view hash) {
  const auto size = static_cast<std::int64_t>(fs::file_size(file));
  if (durability_ != Durability::off) fsync_file(file);
  return place(file, hash, size);
}

BlobRef BlobFiles::place(const fs::path& file, std::string_view hash, std::int64_t size) {
  const fs::path final_path = path_of(hash);
  make_dirs(final_path.parent_path(), durability_);
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  auto& pin = pins_[std::string(hash)];
  ++pin.count;
  pin.last = now;
  if (++writes_since_prune_ >= 4096) prune_pins_locked(now);
  std::error_code ec;
  if (fs::is_regular_file(final_path, ec)) {
    fs::remove(file, ec);  // dedup: identical content is already in place
  } else {
    fs::rename(file, final_path);
    if (durability_ == Durability::full) fsync_dir(final_path.parent_path());
  }
  return BlobRef{std::string(hash), size};
}

void BlobFiles::release(std::string_view hash) {
  std::lock_guard lock(mu_);
  const auto it = pins_.find(std::string(hash));
  if (it != pins_.end() && --it->second.count <= 0) pins_.erase(it);
}

void BlobFiles::prune_pins_locked(std::chrono::steady_clock::time_point now) {
  writes_since_prune_ = 0;
  std::erase_if(pins_, [&](const auto& entry) { return now - entry.second.last > k_pin_grace; });
}

void BlobFiles::remove_unreferenced(const std::vector<std::string>& hashes) {
  std::lock_guard lock(mu_);
  for (const auto& hash : hashes) {
    if (pins_.contains(hash)) continue;
    std::error_code ec;
    fs::remove(path_of(hash), ec);  // already gone is fine; anything else is swept at startup
  }
}

std::size_t BlobFiles::sweep(const std::function<bool(std::string_view hash)>& referenced) {
  for (const auto& entry : fs::directory_iterator(tmp_))
    fs::remove_all(entry.path());
  std::size_t removed = 0;
  for (const auto& entry : fs::recursive_directory_iterator(blobs_)) {
    if (!entry.is_regular_file()) continue;
    if (referenced(entry.path().filename().string())) continue;
    fs::remove(entry.path());
    ++removed;
  }
  return removed;
}

}  // namespace tfork::store
