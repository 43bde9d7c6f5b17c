// SPDX-License-Identifier: Apache-2.0
// The manifest holds every agent's secret (issue 7 §1): it is written through a fresh
// temporary file and renamed into place, so a symlink planted at its path or at a predictable
// temporary name never receives the secrets, and the file is 0600 whatever the umask.

#include "tfork/workflow/manifest.hpp"

#include <catch2/catch.hpp>

#include "temp_dir.hpp"
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using namespace tfork;

using tfork::test::TempDir;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::size_t entries_in(const fs::path& dir) {
  return static_cast<std::size_t>(
      std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

workflow::Manifest one_fork_manifest() {
  workflow::Manifest manifest;
  manifest.source = "data";
  manifest.snapshot = "1796000000000000000";
  workflow::ManifestFork fork;
  fork.bucket = "data-1";
  fork.status = workflow::ForkStatus::created;
  fork.access_key_id = "tid_agent";
  fork.secret_access_key = "tsec_the_secret";
  fork.role = iam::Role::editor;
  manifest.forks.push_back(fork);
  return manifest;
}

// Restores the process umask when the test ends, whatever it set.
struct UmaskGuard {
  explicit UmaskGuard(mode_t mask) : old(::umask(mask)) {}
  ~UmaskGuard() { ::umask(old); }
  mode_t old;
};

}  // namespace

TEST_CASE("write_manifest replaces a symlink at its path and never writes through it") {
  TempDir dir;
  const auto victim = dir.path() / "victim";
  std::ofstream(victim) << "someone else's file\n";
  const auto path = dir.path() / "run.manifest.json";
  fs::create_symlink(victim, path);

  workflow::write_manifest(path, one_fork_manifest(), false);

  CHECK(read_text(victim) == "someone else's file\n");
  CHECK_FALSE(fs::is_symlink(path));
  CHECK(fs::is_regular_file(path));
  CHECK(workflow::read_manifest(path).forks.at(0).secret_access_key == "tsec_the_secret");
}

TEST_CASE("write_manifest never follows a symlink planted at a predictable temporary name") {
  TempDir dir;
  const auto victim = dir.path() / "victim";
  std::ofstream(victim) << "untouched\n";
  const auto path = dir.path() / "run.manifest.json";
  const auto pid = std::to_string(::getpid());
  // The names a writer with a fixed or pid-based temporary name would use.
  for (const std::string& name : std::vector<std::string>{
           "run.manifest.json.tmp", ".run.manifest.json.tmp", "run.manifest.json.tmp." + pid,
           ".run.manifest.json.tmp-" + pid, ".run.manifest.json.tmp-", "run.manifest.json~"}) {
    fs::create_symlink(victim, dir.path() / name);
  }

  workflow::write_manifest(path, one_fork_manifest(), true);
  workflow::write_manifest(path, one_fork_manifest(), false);

  CHECK(read_text(victim) == "untouched\n");
  CHECK(fs::is_regular_file(path));
  CHECK_FALSE(fs::is_symlink(path));
  // Nothing but the planted links, the victim and the manifest: no temporary file is left.
  CHECK(entries_in(dir.path()) == 8);
}

TEST_CASE("write_manifest leaves a 0600 file whatever the umask, and no temporary file") {
  TempDir dir;
  const auto path = dir.path() / "m.json";
  const mode_t mask = GENERATE(mode_t{0}, mode_t{022}, mode_t{077});
  UmaskGuard guard(mask);

  workflow::write_manifest(path, one_fork_manifest(), false);
  // Overwriting keeps the mode too (an older, wider file is replaced, not rewritten).
  ::chmod(path.c_str(), 0644);
  workflow::write_manifest(path, one_fork_manifest(), false);

  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(entries_in(dir.path()) == 1);
}

TEST_CASE("write_manifest fails loudly, leaving the old file, when the directory is missing") {
  TempDir dir;
  const auto path = dir.path() / "gone" / "m.json";
  CHECK_THROWS_AS(workflow::write_manifest(path, one_fork_manifest(), false), TforkError);
  CHECK_FALSE(fs::exists(path));
}

TEST_CASE("a manifest claimed by one run is refused to a second until the first ends",
          "[manifest][claim]") {
  TempDir dir;
  const auto manifest = dir.path() / "run.manifest.json";
  {
    const workflow::ManifestClaim first(manifest);
    CHECK(fs::exists(dir.path() / "run.manifest.json.lock"));
    try {
      const workflow::ManifestClaim second(manifest);
      FAIL("a second claim of a held manifest succeeded");
    } catch (const TforkError& e) {
      CHECK(e.error().kind == ErrorKind::conflict);
      CHECK_THAT(e.error().message, Catch::Contains("in use by another tfork run"));
    }
    // Another manifest in the same directory is another run's business.
    CHECK_NOTHROW(workflow::ManifestClaim(dir.path() / "other.manifest.json"));
  }
  CHECK_FALSE(fs::exists(dir.path() / "run.manifest.json.lock"));
  CHECK_NOTHROW(workflow::ManifestClaim(manifest));
}
