// SPDX-License-Identifier: Apache-2.0
// SpaceReserve's figure of the disk's free space: measured once per freshness window for the
// many small writes of a busy server far from full, afresh for every decision near full, and
// for every refusal.
#include "space_reserve.hpp"

#include <catch2/catch.hpp>

#include "temp_dir.hpp"
#include <filesystem>

using tfork::store::SpaceReserve;
using tfork::test::TempDir;

namespace {

constexpr std::int64_t MiB = std::int64_t{1} << 20;
constexpr std::int64_t k_size = 64 * 1024;  // the reserve: small, so the real disk has room

// A disk whose free bytes and clock the test sets, counting how often it is measured.
struct FakeDisk {
  std::int64_t free = std::int64_t{10} << 30;
  SpaceReserve::Clock::time_point now{};
  int measured = 0;

  SpaceReserve::Probe probe() {
    return {[this](const std::filesystem::path&) {
              ++measured;
              return free;
            },
            [this] { return now; }};
  }
};

}  // namespace

TEST_CASE("SpaceReserve: far from full, one figure serves the writes of its freshness window",
          "[store][reserve]") {
  TempDir dir;
  FakeDisk disk;
  SpaceReserve reserve(dir.path() / "reserve", k_size, disk.probe());
  reserve.settle();
  REQUIRE(std::filesystem::exists(dir.path() / "reserve"));
  const int after_settle = disk.measured;
  for (int i = 0; i < 1000; ++i)
    REQUIRE(reserve.admit_data(4096));
  CHECK(disk.measured == after_settle + 1);  // the first admission measures, no other does
  disk.now += SpaceReserve::k_fresh;
  REQUIRE(reserve.admit_data(4096));
  CHECK(disk.measured == after_settle + 2);  // a stale figure is measured again
}

TEST_CASE("SpaceReserve: near full, every decision is made on a fresh figure", "[store][reserve]") {
  TempDir dir;
  FakeDisk disk;
  disk.free = k_size + SpaceReserve::k_close / 2;
  SpaceReserve reserve(dir.path() / "reserve", k_size, disk.probe());
  reserve.settle();
  const int before = disk.measured;
  for (int i = 0; i < 10; ++i)
    REQUIRE(reserve.admit_data(0));
  CHECK(disk.measured == before + 10);
}

TEST_CASE("SpaceReserve: what was admitted since the figure counts against it",
          "[store][reserve]") {
  TempDir dir;
  FakeDisk disk;
  disk.free = k_size + SpaceReserve::k_close + 100 * MiB;
  SpaceReserve reserve(dir.path() / "reserve", k_size, disk.probe());
  reserve.settle();
  REQUIRE(reserve.admit_data(0));
  const int before = disk.measured;
  REQUIRE(reserve.admit_data(60 * MiB));  // leaves k_close and more: decided on the figure
  CHECK(disk.measured == before);
  // The disk took those bytes; the next 60 MiB would come within k_close: measured, refused.
  disk.free -= 60 * MiB;
  disk.free -= 50 * MiB;  // and another process took some
  CHECK_FALSE(reserve.admit_data(60 * MiB));
  CHECK(disk.measured == before + 1);
  CHECK(std::filesystem::exists(dir.path() / "reserve"));  // a big body gives nothing up
}

TEST_CASE("SpaceReserve: a disk filled by another process is noticed once the figure is stale",
          "[store][reserve]") {
  TempDir dir;
  FakeDisk disk;
  SpaceReserve reserve(dir.path() / "reserve", k_size, disk.probe());
  reserve.settle();
  REQUIRE(reserve.admit_data(0));
  disk.free = k_size / 2;  // filled from outside
  disk.now += SpaceReserve::k_fresh;
  CHECK_FALSE(reserve.admit_data(0));
  CHECK_FALSE(std::filesystem::exists(dir.path() / "reserve"));  // given to deletes
  // Space is back: the reserve is made again and data admitted.
  disk.free = std::int64_t{10} << 30;
  reserve.restore();
  CHECK(std::filesystem::exists(dir.path() / "reserve"));
  CHECK(reserve.admit_data(4096));
}
