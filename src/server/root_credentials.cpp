// SPDX-License-Identifier: Apache-2.0
// Root credentials of `tfork serve` (cli.md §8): flags, else environment, else a pair
// generated once and kept in the data directory with mode 0600.
#include "tfork/crypto/hash.hpp"
#include "tfork/server/serve.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

namespace tfork::server {
namespace {

constexpr const char* k_file_name = "root-credentials";

std::optional<RootCredentials> read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  RootCredentials out;
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const auto name = line.substr(0, eq);
    if (name == "access_key_id") out.access_key = line.substr(eq + 1);
    if (name == "secret_access_key") out.secret_key = line.substr(eq + 1);
  }
  if (out.access_key.empty() || out.secret_key.empty()) {
    throw std::runtime_error(path.string() + " is incomplete; delete it to generate a new pair");
  }
  out.source = path.string();
  return out;
}

}  // namespace

RootCredentials resolve_root_credentials(const ServeOptions& options) {
  if (!options.root_access_key.empty() || !options.root_secret_key.empty()) {
    if (options.root_access_key.empty() || options.root_secret_key.empty()) {
      throw std::runtime_error("--root-access-key and --root-secret-key-file go together");
    }
    return {options.root_access_key, options.root_secret_key, "flags"};
  }
  auto access = options.environment_root_access_key;
  auto secret = options.environment_root_secret_key;
  if (!access.empty() || !secret.empty()) {
    if (access.empty() || secret.empty()) {
      throw std::runtime_error("TFORK_ROOT_ACCESS_KEY and TFORK_ROOT_SECRET_KEY go together");
    }
    return {std::move(access), std::move(secret), "environment"};
  }

  const auto path = options.data_dir / k_file_name;
  if (auto existing = read_file(path)) return std::move(*existing);
  RootCredentials generated{"tid_" + crypto::random_alnum(24), "tsec_" + crypto::random_alnum(40),
                            path.string()};
  const std::string text = "access_key_id=" + generated.access_key +
                           "\nsecret_access_key=" + generated.secret_key + "\n";
  // O_EXCL: two servers starting at once must not overwrite each other's pair.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST) {
      if (auto existing = read_file(path)) return std::move(*existing);
    }
    throw std::runtime_error("cannot create " + path.string() + ": " + std::strerror(errno));
  }
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot write " + path.string());
  return generated;
}

}  // namespace tfork::server
