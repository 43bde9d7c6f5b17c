// SPDX-License-Identifier: Apache-2.0
// `tfork serve --verify` (issue 9 §4): a scrub of the data directory. Every blob the store
// records is read back and hashed, whether a file or bytes kept in the database; one that is
// gone, has another size or hashes to something else is reported on its own line. No server is
// started, and nothing is changed beyond what opening the store always does (an unfinished upload's
// temporary files go).
#include "tfork/crypto/hash.hpp"
#include "tfork/server/serve.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace tfork::server {
namespace {

// Objects named per bad blob; a blob shared by many forks' objects gets "and more".
constexpr std::size_t k_users_named = 5;

Error verify_error(std::string code, std::string message) {
  return Error{ErrorKind::other, std::move(code), std::move(message), 0, {}};
}

struct BlobCheck {
  enum class Verdict { good, missing, unreadable, wrong_size, corrupt } verdict = Verdict::good;
  std::int64_t size = 0;
  std::string sha256_hex;
  std::string error;  // errno text for missing/unreadable
};

BlobCheck judge(BlobCheck result, const store::BlobRef& blob) {
  if (result.size != blob.size)
    result.verdict = BlobCheck::Verdict::wrong_size;
  else if (result.sha256_hex != blob.hash)
    result.verdict = BlobCheck::Verdict::corrupt;
  return result;
}

// Reads the file through a fixed buffer: its size and SHA-256.
BlobCheck check_blob(const std::filesystem::path& path, const store::BlobRef& blob) {
  BlobCheck result;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    result.verdict = errno == ENOENT ? BlobCheck::Verdict::missing : BlobCheck::Verdict::unreadable;
    result.error = std::strerror(errno);
    return result;
  }
  crypto::Digest digest(crypto::Digest::Algorithm::sha256);
  std::string buffer(1 << 20, '\0');
  while (true) {
    const auto got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      result.verdict = BlobCheck::Verdict::unreadable;
      result.error = std::strerror(errno);
      ::close(fd);
      return result;
    }
    if (got == 0) break;
    digest.update(std::string_view(buffer.data(), static_cast<std::size_t>(got)));
    result.size += got;
  }
  ::close(fd);
  result.sha256_hex = crypto::to_hex(digest.finish());
  return judge(std::move(result), blob);
}

// A small blob's bytes from the database.
BlobCheck check_bytes(const std::string& bytes, const store::BlobRef& blob) {
  BlobCheck result;
  result.size = std::ssize(bytes);
  result.sha256_hex = crypto::sha256_hex(bytes);
  return judge(std::move(result), blob);
}

}  // namespace

std::optional<Error> verify_store(const ServeOptions& options,
                                  const std::function<void(const std::string& line)>& report) {
  const auto& dir = options.data_dir;
  std::error_code ec;
  if (!std::filesystem::exists(dir / "meta.db", ec)) {
    return verify_error("DataDirectoryNotOurs",
                        "--data " + dir.string() + " is not a tfork data directory (no meta.db)");
  }
  // The store takes <data>/LOCK: a running server's directory is refused, not read under it.
  auto opened = store::Store::open(dir, store::StoreOptions{options.durability});
  if (!opened) {
    return verify_error("StoreUnusable",
                        "cannot open the store in " + dir.string() + ": " + opened.error().message);
  }
  auto& store = **opened;
  store.wait_for_reclaims();  // a deleted bucket's blobs are gone, not missing
  const auto blobs = store.list_blobs();
  if (!blobs) {
    return verify_error("StoreUnusable",
                        "cannot list the blobs in " + dir.string() + ": " + blobs.error().message);
  }

  std::size_t missing = 0;
  std::size_t corrupt = 0;
  std::int64_t bytes = 0;
  for (const auto& blob : *blobs) {
    // Only a blob small enough can be kept in the database: larger ones cost no query.
    auto in_db = blob.size <= store::k_max_db_blob
                     ? store.db_blob_bytes(blob)
                     : store::Result<std::optional<std::string>>(std::nullopt);
    if (!in_db) {
      return verify_error("StoreUnusable", "cannot read blob " + blob.hash + " in " + dir.string() +
                                               ": " + in_db.error().message);
    }
    // Where the blob lives, as the report names it: its file, or the database.
    const auto path = *in_db ? dir / "meta.db" : store.blob_path(blob);
    const auto found = *in_db ? check_bytes(**in_db, blob) : check_blob(path, blob);
    bytes += found.size;
    if (found.verdict == BlobCheck::Verdict::good) continue;
    // And what a person lost: the objects whose bytes these are (issue 26 §3).
    const auto users = store.blob_users(blob, k_users_named + 1);
    const auto named = [&] {
      if (!users) return fmt::format(" [objects not known: {}]", users.error().message);
      if (users->empty()) return std::string(" [no object uses it]");
      const auto shown = std::min(users->size(), k_users_named);
      return fmt::format(" [{}{}]", fmt::join(users->begin(), users->begin() + shown, ", "),
                         users->size() > shown ? ", and more" : "");
    }();
    switch (found.verdict) {
      case BlobCheck::Verdict::good:
        break;
      case BlobCheck::Verdict::missing:
        ++missing;
        report(fmt::format("missing {}: {} ({}){}", blob.hash, path.string(), found.error, named));
        break;
      case BlobCheck::Verdict::unreadable:
        ++corrupt;
        report(
            fmt::format("unreadable {}: {} ({}){}", blob.hash, path.string(), found.error, named));
        break;
      case BlobCheck::Verdict::wrong_size:
        ++corrupt;
        report(fmt::format("corrupt {}: {} has {} bytes, {} recorded{}", blob.hash, path.string(),
                           found.size, blob.size, named));
        break;
      case BlobCheck::Verdict::corrupt:
        ++corrupt;
        report(fmt::format("corrupt {}: {} hashes to {}{}", blob.hash, path.string(),
                           found.sha256_hex, named));
        break;
    }
  }
  report(fmt::format("verified {} blobs ({} bytes): {} corrupt, {} missing", blobs->size(), bytes,
                     corrupt, missing));
  if (corrupt + missing > 0) {
    return verify_error("BlobsCorrupt",
                        fmt::format("{} of {} blobs in {} are corrupt or missing",
                                    corrupt + missing, blobs->size(), dir.string()));
  }
  return std::nullopt;
}

}  // namespace tfork::server
