// SPDX-License-Identifier: Apache-2.0
// The shared output rules of issue 11: times in tables and JSON, "-" for absent cells,
// natural order of names, the progress line, and the default fork prefix's length rule.
#include "tfork/output/progress.hpp"
#include "tfork/output/render.hpp"
#include "tfork/rules/bucket_name.hpp"
#include "tfork/workflow/fork_batch.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

using namespace std::chrono_literals;

TEST_CASE("times: tables in whole UTC seconds with a space, JSON RFC 3339 in seconds",
          "[render][time]") {
  using tfork::output::json_time;
  using tfork::output::table_time;
  CHECK(table_time("2026-11-30T09:26:19Z") == "2026-11-30 09:26:19");
  CHECK(table_time("2026-11-30T09:26:19.999999999Z") == "2026-11-30 09:26:19");  // not rounded up
  CHECK(table_time("2026-11-30T10:26:19.5+01:00") == "2026-11-30 09:26:19");
  CHECK(table_time("2026-11-30T23:59:59-00:30") == "2026-12-01 00:29:59");
  CHECK(table_time("") == "-");
  CHECK(table_time("yesterday") == "yesterday");  // shown as it came, not lost
  CHECK(table_time("2026-11-30T09:26:19+ab:cd") == "2026-11-30T09:26:19+ab:cd");

  CHECK(json_time("2026-11-30T09:26:19.19667705Z") == "2026-11-30T09:26:19Z");
  CHECK(json_time("2026-11-30T10:26:19+01:00") == "2026-11-30T09:26:19Z");
  CHECK(json_time("1969-12-31T23:59:59.5Z") == "1969-12-31T23:59:59Z");
  CHECK(json_time("").is_null());
  CHECK(json_time("soon") == "soon");

  // Every table time has the same width, so a CREATED column lines up.
  CHECK(table_time("2026-01-02T03:04:05Z").size() == table_time("2026-11-30T19:26:19Z").size());
}

TEST_CASE("absent cells are '-'", "[render]") {
  CHECK(tfork::output::cell_or_dash("") == "-");
  CHECK(tfork::output::cell_or_dash("x") == "x");
}

TEST_CASE("natural order: digit runs by value", "[render][sort]") {
  using tfork::output::natural_less;
  CHECK(natural_less("run-2", "run-10"));
  CHECK_FALSE(natural_less("run-10", "run-2"));
  CHECK(natural_less("run-9-1", "run-10-1"));
  CHECK(natural_less("a", "b"));
  CHECK(natural_less("run", "run-1"));
  CHECK(natural_less("a2b", "a2c"));
  CHECK(natural_less("a-fork-1764494779000-9", "a-fork-1764494779000-10"));
  CHECK(natural_less("x99999999999999999999998", "x99999999999999999999999"));  // no overflow
  CHECK_FALSE(natural_less("same", "same"));
  // Equal values written differently still have one order, both ways consistent.
  CHECK(natural_less("a01", "a1") != natural_less("a1", "a01"));

  std::vector<std::string> names{"run-10", "run-1", "run-2", "other", "run-100", "run-3"};
  std::ranges::sort(names, natural_less);
  CHECK(names == std::vector<std::string>{"other", "run-1", "run-2", "run-3", "run-10", "run-100"});
}

TEST_CASE("the progress line: done/total, failures only when some, elapsed", "[progress]") {
  using tfork::output::progress_line;
  CHECK(progress_line("forks", 3, 10, 0, 4s) == "forks 3/10, 4s");
  CHECK(progress_line("forks", 3, 10, 1, 4s) == "forks 3/10, 1 failed, 4s");
  CHECK(progress_line("buckets", 0, 5, 0, 125s) == "buckets 0/5, 2m05s");
  CHECK(progress_line("keys", 5, 5, 2, 3723s) == "keys 5/5, 2 failed, 1h02m03s");
}

TEST_CASE("progress only on a terminal, when enabled, for more than a few items", "[progress]") {
  using tfork::output::progress_wanted;
  CHECK(progress_wanted(true, true, 4));
  CHECK_FALSE(progress_wanted(true, false, 100));  // stderr is a pipe or a file
  CHECK_FALSE(progress_wanted(false, true, 100));  // -q, --no-progress
  CHECK_FALSE(progress_wanted(true, true, 3));
}

TEST_CASE("default fork prefix: the source is cut so every name fits in 63", "[fork][prefix]") {
  using tfork::workflow::default_fork_prefix;
  constexpr std::int64_t now = 1764494779000;
  CHECK(default_fork_prefix("data", now, 8) == "data-fork-1764494779000");

  const std::string long_source(63, 'a');
  for (int count : {1, 9, 10, 99, 100, 1000}) {
    INFO(count);
    const auto prefix = default_fork_prefix(long_source, now, count);
    const auto last = prefix + "-" + std::to_string(count);
    CHECK(last.size() == 63);
    CHECK_FALSE(tfork::rules::bucket_name_problem(last));
    CHECK(prefix.ends_with("-fork-1764494779000"));
  }

  // A cut that lands on '-' or '.' drops it: no "ab--fork" or "ab.-fork".
  // 63 - len("-fork-1764494779000") - len("-10") = 41 characters of source room.
  const std::string dashed = std::string(40, 'b') + "-c" + std::string(20, 'd');
  const auto prefix = default_fork_prefix(dashed, now, 10);
  CHECK(prefix == std::string(40, 'b') + "-fork-1764494779000");
  CHECK(default_fork_prefix(std::string(40, 'b') + ".c" + std::string(20, 'd'), now, 10) ==
        std::string(40, 'b') + "-fork-1764494779000");
  for (int count = 1; count <= 1000; ++count) {
    const auto name = default_fork_prefix(dashed, now, 1000) + "-" + std::to_string(count);
    if (auto problem = tfork::rules::bucket_name_problem(name)) FAIL(name << ": " << *problem);
  }
}
