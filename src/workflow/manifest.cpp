// SPDX-License-Identifier: Apache-2.0
#include "tfork/workflow/manifest.hpp"

#include "tfork/crypto/hash.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace tfork::workflow {
namespace {

[[noreturn]] void io_error(const std::filesystem::path& path, std::string_view what) {
  throw TforkError(
      ErrorKind::other, "ManifestWriteError",
      fmt::format("cannot {} manifest {}: {}", what, path.string(), std::strerror(errno)));
}

[[noreturn]] void not_a_manifest(const std::string& why) {
  throw TforkError(ErrorKind::usage, "InvalidManifest", "not a tfork manifest: " + why);
}

std::string string_field(const output::Json& object, const char* name, bool required) {
  if (!object.contains(name) || object[name].is_null()) {
    if (required) not_a_manifest(fmt::format("\"{}\" is missing", name));
    return {};
  }
  if (!object[name].is_string()) not_a_manifest(fmt::format("\"{}\" is not a string", name));
  return object[name].get<std::string>();
}

// Writes all of `text` to `fd`, then closes it; false (errno set) on failure.
bool write_all_and_close(int fd, std::string_view text, bool durable) {
  while (!text.empty()) {
    const auto written = ::write(fd, text.data(), text.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return false;
    }
    text.remove_prefix(static_cast<std::size_t>(written));
  }
  if (durable && ::fsync(fd) != 0) {
    ::close(fd);
    return false;
  }
  return ::close(fd) == 0;
}

}  // namespace

std::optional<ForkStatus> parse_fork_status(std::string_view text) {
  for (auto status :
       {ForkStatus::pending, ForkStatus::created, ForkStatus::exists, ForkStatus::failed,
        ForkStatus::rolled_back, ForkStatus::deleted, ForkStatus::not_attempted})
    if (status_name(status) == text) return status;
  return std::nullopt;
}

bool ManifestFork::may_exist() const {
  switch (status) {
    case ForkStatus::pending:
    case ForkStatus::created:
    case ForkStatus::exists:
      return true;
    // Not a manifest's words (parse_fork_status refuses them); if one got here, the fork is
    // taken to exist, which costs teardown a HeadBucket and never loses a fork.
    case ForkStatus::already_gone:
    case ForkStatus::not_found:
    case ForkStatus::skipped:
    case ForkStatus::kept:
    case ForkStatus::would_delete:
    case ForkStatus::interrupted:
    case ForkStatus::none:
      return true;
    case ForkStatus::rolled_back:
    case ForkStatus::deleted:
    case ForkStatus::not_attempted:
      return false;
    case ForkStatus::failed:
      // A definite 4xx answer means the service did not create it (409: the name belongs to
      // someone else, so it must not be touched). No answer, or a 5xx after retries, leaves
      // it open whether an earlier attempt got through.
      return !error || error->http_status == 0 || error->http_status >= 500;
  }
  return true;
}

bool records_live_resources(const Manifest& manifest) {
  return std::ranges::any_of(manifest.forks, [](const ManifestFork& fork) {
    return fork.may_exist() || (!fork.access_key_id.empty() && !fork.key_revoked) ||
           fork.key_may_be_unrecorded();
  });
}

std::string key_name_for(std::string_view bucket) {
  return std::string(bucket) + "-key";
}

Error item_error_from_json(const output::Json& json) {
  Error error;
  if (!json.is_object()) return error;
  error.code = json.value("code", "");
  error.message = json.value("message", "");
  if (json.contains("http_status") && json["http_status"].is_number_integer())
    error.http_status = json["http_status"].get<int>();
  error.kind = kind_for_service_error(error.code, error.http_status);
  return error;
}

output::Json to_json(const Manifest& manifest) {
  output::Json forks = output::Json::array();
  for (const auto& fork : manifest.forks) {
    auto details = output::Json{
        {"access_key_id", output::json_or_null(fork.access_key_id)},
        {"secret_access_key", output::json_or_null(fork.secret_access_key)},
        {"role", fork.role ? output::Json(iam::role_name(*fork.role)) : output::Json()}};
    if (fork.key_revoked) details["key_status"] = "revoked";
    auto item = output::item_json(output::Json{{"bucket", fork.bucket}},
                                  output::ItemStatus{fork.status, fork.error}, details);
    if (fork.agent) {
      item["agent"] = output::Json{
          {"exit_code",
           fork.agent->exit_code ? output::Json(*fork.agent->exit_code) : output::Json()},
          {"signal", fork.agent->signal ? output::Json(*fork.agent->signal) : output::Json()},
          {"seconds", fork.agent->seconds},
          {"workdir", output::json_or_null(fork.agent->workdir)}};
    }
    forks.push_back(std::move(item));
  }
  return output::Json{
      {"source", manifest.source},
      {"snapshot", output::json_or_null(manifest.snapshot)},
      {"endpoint", manifest.endpoint},
      {"iam_endpoint", manifest.iam_endpoint},
      {"forks", std::move(forks)},
      {"snapshot_taken", manifest.snapshot_taken},
      {"snapshot_name", output::json_or_null(manifest.snapshot_name)},
      {"expires_at",
       manifest.expires_at ? output::Json(expiry_text(*manifest.expires_at)) : output::Json()}};
}

Manifest manifest_from_json(const output::Json& json) {
  if (!json.is_object()) not_a_manifest("the document is not a JSON object");
  Manifest manifest;
  manifest.source = string_field(json, "source", true);
  manifest.snapshot = string_field(json, "snapshot", false);
  manifest.endpoint = string_field(json, "endpoint", false);
  manifest.iam_endpoint = string_field(json, "iam_endpoint", false);
  if (json.contains("snapshot_taken") && json["snapshot_taken"].is_boolean())
    manifest.snapshot_taken = json["snapshot_taken"].get<bool>();
  manifest.snapshot_name = string_field(json, "snapshot_name", false);
  if (const auto expires_at = string_field(json, "expires_at", false); !expires_at.empty()) {
    manifest.expires_at = parse_expiry_text(expires_at);
    if (!manifest.expires_at)
      not_a_manifest(fmt::format("\"expires_at\" is not an RFC 3339 UTC time ('{}')",
                                 output::printable(expires_at)));
  }
  if (!json.contains("forks") || !json["forks"].is_array()) not_a_manifest("\"forks\" is missing");
  std::size_t position = 0;
  for (const auto& item : json["forks"]) {
    ++position;
    // Which entry is wrong, by its place (1-based) and its bucket when it has one.
    const auto entry = [&](std::string_view bucket) {
      return bucket.empty() ? fmt::format("entry {} of \"forks\"", position)
                            : fmt::format("entry {} of \"forks\" ({})", position, bucket);
    };
    if (!item.is_object()) not_a_manifest(entry("") + " is not an object");
    ManifestFork fork;
    const auto required = [&](const char* name) {
      if (!item.contains(name) || !item[name].is_string())
        not_a_manifest(fmt::format("{} has no \"{}\" string", entry(fork.bucket), name));
      return item[name].get<std::string>();
    };
    fork.bucket = required("bucket");
    const auto status_text = required("status");
    const auto status = parse_fork_status(status_text);
    if (!status)
      not_a_manifest(fmt::format("{} has an unknown status '{}'", entry(fork.bucket),
                                 output::printable(status_text)));
    fork.status = *status;
    fork.access_key_id = string_field(item, "access_key_id", false);
    fork.secret_access_key = string_field(item, "secret_access_key", false);
    const auto role = string_field(item, "role", false);
    if (role == "Editor") fork.role = iam::Role::editor;
    if (role == "ReadOnly") fork.role = iam::Role::read_only;
    if (!role.empty() && !fork.role) not_a_manifest("fork " + fork.bucket + " has unknown role");
    fork.key_revoked = string_field(item, "key_status", false) == "revoked";
    if (item.contains("error") && item["error"].is_object())
      fork.error = item_error_from_json(item["error"]);
    if (item.contains("agent") && item["agent"].is_object()) {
      const auto& agent = item["agent"];
      AgentRecord record;
      if (agent.contains("exit_code") && agent["exit_code"].is_number_integer())
        record.exit_code = agent["exit_code"].get<int>();
      if (agent.contains("signal") && agent["signal"].is_string())
        record.signal = agent["signal"].get<std::string>();
      if (agent.contains("seconds") && agent["seconds"].is_number())
        record.seconds = agent["seconds"].get<double>();
      if (agent.contains("workdir") && agent["workdir"].is_string())
        record.workdir = agent["workdir"].get<std::string>();
      fork.agent = record;
    }
    manifest.forks.push_back(std::move(fork));
  }
  return manifest;
}

std::string to_table(const Manifest& manifest) {
  const bool any_error =
      std::ranges::any_of(manifest.forks, [](const auto& f) { return f.error.has_value(); });
  std::vector<std::string> columns{"BUCKET", "STATUS", "ACCESS_KEY_ID", "ROLE"};
  if (any_error) columns.emplace_back("ERROR");
  output::Table table(std::move(columns));
  for (const auto& fork : manifest.forks) {
    std::vector<std::string> row{fork.bucket, std::string(status_name(fork.status)),
                                 fork.access_key_id.empty() ? "-" : fork.access_key_id,
                                 fork.role ? std::string(iam::role_name(*fork.role)) : "-"};
    if (any_error)
      row.push_back(output::item_error_text(output::ItemStatus{fork.status, fork.error}));
    table.row(std::move(row));
  }
  return fmt::format("source {}  snapshot {}{}\n", manifest.source,
                     manifest.snapshot.empty() ? "-" : manifest.snapshot,
                     manifest.expires_at ? "  expires " + expiry_text(*manifest.expires_at)
                                         : std::string()) +
         table.render();
}

void write_manifest(const std::filesystem::path& path, const Manifest& manifest, bool durable) {
  const auto text = to_json(manifest).dump(2) + "\n";
  const auto directory = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  // The temporary file lives next to the target so that rename is atomic (same filesystem).
  // A fresh file with an unpredictable name (cli.md §4.4): O_EXCL fails rather than reuse a
  // file or follow a symlink someone planted there, so the secrets go into our own new file.
  std::filesystem::path temp;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 16; ++attempt) {
    temp = directory / fmt::format(".{}.tmp-{}", path.filename().string(), crypto::random_hex(12));
    fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) io_error(path, "create a temporary file for the");
  // The umask may have taken bits away, never added any; 0600 whatever it is.
  if (::fchmod(fd, 0600) != 0 || !write_all_and_close(fd, text, durable)) {
    const int saved = errno;
    ::unlink(temp.c_str());
    errno = saved;
    io_error(path, "write the");
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    errno = saved;
    io_error(path, "replace the");
  }
  if (durable) {
    const int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
      ::fsync(dir_fd);
      ::close(dir_fd);
    }
  }
}

Manifest read_manifest(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw TforkError(
        ErrorKind::usage, "NoSuchManifest",
        fmt::format("cannot read manifest {}: {}", path.string(), std::strerror(errno)));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const auto text = buffer.str();
  output::Json json;
  try {
    json = output::Json::parse(text);
  } catch (const output::Json::parse_error& error) {
    // nlohmann counts bytes; a person counts lines and columns (1-based) of the first bad byte.
    const auto at = std::min<std::size_t>(error.byte == 0 ? 0 : error.byte - 1, text.size());
    const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(at), '\n');
    const auto line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
    const auto column = at - (line_start == std::string::npos || at == 0 ? 0 : line_start + 1) + 1;
    throw TforkError(ErrorKind::usage, "InvalidManifest",
                     fmt::format("manifest {} is not valid JSON (line {}, column {})",
                                 path.string(), line, column));
  }
  try {
    return manifest_from_json(json);
  } catch (const TforkError& error) {
    throw TforkError(ErrorKind::usage, error.error().code,
                     fmt::format("manifest {}: {}", path.string(), error.error().message));
  }
}

ManifestClaim::ManifestClaim(const std::filesystem::path& manifest)
    : lock_path_(manifest.string() + ".lock") {
  // The lock file is removed by the run that ends, so a run that opened it just before may hold
  // a lock on a name no longer there: it checks that the path is still its file, else retries.
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
      throw TforkError(
          ErrorKind::other, "ManifestLock",
          fmt::format("cannot create {}: {}", lock_path_.string(), std::strerror(errno)));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      ::close(fd);
      if (error == EWOULDBLOCK)
        throw TforkError(ErrorKind::conflict, "ManifestInUse",
                         fmt::format("manifest {} is in use by another tfork run (it holds {}); "
                                     "wait for it, or choose another --manifest",
                                     manifest.string(), lock_path_.string()));
      throw TforkError(
          ErrorKind::other, "ManifestLock",
          fmt::format("cannot lock {}: {}", lock_path_.string(), std::strerror(error)));
    }
    struct stat held {
    }, named{};
    if (::fstat(fd, &held) == 0 && ::stat(lock_path_.c_str(), &named) == 0 &&
        held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
      fd_ = fd;
      return;
    }
    ::close(fd);
  }
  throw TforkError(ErrorKind::conflict, "ManifestInUse",
                   fmt::format("manifest {} keeps changing hands; try again", manifest.string()));
}

ManifestClaim::~ManifestClaim() {
  if (fd_ < 0) return;
  ::unlink(lock_path_.c_str());  // while still held: no other run holds this name's file
  ::close(fd_);
}

}  // namespace tfork::workflow
