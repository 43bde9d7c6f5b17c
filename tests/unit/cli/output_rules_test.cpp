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

TEST_CASE("the progress texts: count, failures, rate and time left; the end of a phase",
          "[progress]") {
  using namespace std::chrono_literals;
  using tfork::output::duration_text;
  using tfork::output::phase_end_line;
  using tfork::output::progress_line;
  CHECK(duration_text(340ms) == "0.3s");
  CHECK(duration_text(9950ms) == "9.9s");
  CHECK(duration_text(12s) == "12s");
  CHECK(duration_text(125s) == "2m05s");
  CHECK(duration_text(3723s) == "1h02m03s");
  // Before anything is decided the time spent, so the line visibly lives.
  CHECK(progress_line("forks", 0, 200, 0, 3s) == "forks 0/200, 3.0s");
  // 81 done in 0.5 s: 162/s, and 119 left take 0.73 s, shown as a whole second up.
  CHECK(progress_line("forks", 81, 200, 0, 500ms) == "forks 81/200, 162/s, ETA 1s");
  CHECK(progress_line("forks", 81, 200, 2, 500ms) == "forks 81/200, 2 failed, 162/s, ETA 1s");
  CHECK(progress_line("buckets", 1, 5, 0, 4s) == "buckets 1/5, 0.2/s, ETA 16s");
  CHECK(progress_line("buckets", 1, 500, 0, 4s) == "buckets 1/500, 0.2/s, ETA 33m16s");
  CHECK(phase_end_line("keys", 64, 64, 0, 120ms) == "keys 64/64, done in 0.1s");
  CHECK(phase_end_line("keys", 64, 64, 3, 120ms) == "keys 64/64, 3 failed, done in 0.1s");
  CHECK(phase_end_line("forks", 30, 64, 0, 2s) == "forks 30/64, stopped after 2.0s");
}

namespace {

// What a progress sink writes, for the events of a run: `phases` of (name, items, failures).
std::string render(tfork::output::ProgressMode mode,
                   const std::vector<std::tuple<std::string, int, int>>& phases,
                   bool close = true) {
  using tfork::output::ProgressEvent;
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* out = ::open_memstream(&buffer, &size);
  REQUIRE(out != nullptr);
  {
    auto sink = tfork::output::make_progress_sink(mode, out);
    for (const auto& [name, items, failures] : phases) {
      ProgressEvent event;
      event.phase = name;
      event.total = static_cast<std::size_t>(items);
      event.kind = ProgressEvent::Kind::phase_started;
      sink->on_event(event);
      for (int i = 1; i <= items; ++i) {
        event.kind = ProgressEvent::Kind::item_done;
        event.done = static_cast<std::size_t>(i);
        event.failed = static_cast<std::size_t>(std::max(0, i - (items - failures)));
        const auto item = "item-" + std::to_string(i);
        event.item = item;
        event.status =
            i > items - failures ? tfork::output::Status::failed : tfork::output::Status::created;
        event.request_id = i == 1 ? "" : "REQ";
        sink->on_event(event);
      }
      event.kind = ProgressEvent::Kind::phase_ended;
      sink->on_event(event);
    }
    if (close) sink->close();
  }
  std::fclose(out);
  std::string text(buffer, size);
  std::free(buffer);
  return text;
}

}  // namespace

TEST_CASE("on a terminal: one line per phase, redrawn in place, replaced, erased at the end",
          "[progress]") {
  const auto text = render(tfork::output::ProgressMode::terminal,
                           {{"forks", 8, 0}, {"tiny", 2, 0}, {"keys", 8, 1}});
  CHECK(text.find('\n') == std::string::npos);  // never a new line: each phase replaces the last
  CHECK(text.find("\r\033[Kforks 0/8, ") != std::string::npos);
  CHECK(text.find("\r\033[Kforks 8/8, done in ") != std::string::npos);
  CHECK(text.find("\r\033[Kkeys 8/8, 1 failed, done in ") != std::string::npos);
  CHECK(text.find("tiny") == std::string::npos);  // too small a phase to draw
  CHECK(text.ends_with("\r\033[K"));              // the last line erased by close()
}

TEST_CASE("in a log: a plain line at the end of each phase (and every few seconds)", "[progress]") {
  const auto text =
      render(tfork::output::ProgressMode::plain, {{"forks", 8, 0}, {"tiny", 2, 0}, {"keys", 8, 1}});
  CHECK(text.find('\033') == std::string::npos);
  CHECK(text.find('\r') == std::string::npos);
  std::istringstream lines(text);
  std::vector<std::string> seen;
  for (std::string line; std::getline(lines, line);)
    seen.push_back(line);
  REQUIRE(seen.size() == 2);
  CHECK(seen[0].starts_with("tfork: forks 8/8, done in "));
  CHECK(seen[1].starts_with("tfork: keys 8/8, 1 failed, done in "));
}

TEST_CASE("--progress json: one event per line, every phase, with items and request ids",
          "[progress]") {
  const auto text = render(tfork::output::ProgressMode::json, {{"tiny", 2, 1}});
  std::istringstream lines(text);
  std::vector<nlohmann::json> events;
  for (std::string line; std::getline(lines, line);)
    events.push_back(nlohmann::json::parse(line));
  REQUIRE(events.size() == 4);
  CHECK(events[0] == nlohmann::json{{"event", "phase_started"}, {"phase", "tiny"}, {"total", 2}});
  CHECK(events[1]["event"] == "item");
  CHECK(events[1]["item"] == "item-1");
  CHECK(events[1]["status"] == "created");
  CHECK(events[1]["request_id"].is_null());
  CHECK(events[2]["status"] == "failed");
  CHECK(events[2]["done"] == 2);
  CHECK(events[2]["failed"] == 1);
  CHECK(events[2]["total"] == 2);
  CHECK(events[2]["request_id"] == "REQ");
  CHECK(events[3]["event"] == "phase_ended");
  CHECK(events[3]["done"] == 2);
  CHECK(events[3]["seconds"].is_number());
}

TEST_CASE("progress json escapes what a server or a command line put in a name", "[progress]") {
  tfork::output::ProgressEvent event;
  event.phase = "forks";
  event.item = "bad\x1b[2J\nname\xff";
  event.status = tfork::output::Status::failed;
  const auto line = tfork::output::progress_json(event, {});
  CHECK(line.find('\n') == std::string::npos);
  CHECK(line.find('\x1b') == std::string::npos);
  CHECK(nlohmann::json::parse(line)["item"].get<std::string>().starts_with("bad"));
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
