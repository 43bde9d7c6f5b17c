// SPDX-License-Identifier: Apache-2.0
// tfork doctor [--probe] (cli.md §14, issue 23 §4). The configuration checks use the same
// resolution as every other command (cli/config.hpp); the probes ask the service the open
// questions of tigris-wire §10 on a bucket, forks, snapshots and a key of their own, all named
// tfork-doctor-<random>, and remove them afterwards, also when interrupted or when a probe
// fails. What a probe sees that `tfork serve --quirks` imitates is reported by that quirk's name.
#include "tfork/commands/doctor.hpp"

#include "tfork/cli/context.hpp"
#include "tfork/cli/help.hpp"
#include "tfork/cli/values.hpp"
#include "tfork/crypto/hash.hpp"
#include "tfork/iam/access_keys.hpp"
#include "tfork/modules/modules.hpp"
#include "tfork/output/render.hpp"
#include "tfork/server/variance.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/tigris/fork_ops.hpp"
#include "tfork/tigris/object_ops.hpp"
#include "tfork/version.hpp"
#include "tfork/workflow/batch.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iomanip>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

namespace tfork::commands {

std::string masked_key_id(std::string_view id) {
  if (id.size() <= 8) return std::string(id.size(), '*');
  const auto head = id.starts_with("tid_") ? std::size_t{4} : std::size_t{2};
  return std::string(id.substr(0, head)) + "…" + std::string(id.substr(id.size() - 4));
}

namespace {

using Clock = std::chrono::steady_clock;
using output::Json;

struct DoctorOptions {
  bool probe = false;
  int wait_seconds = 30;  // the longest wait for a setting or a listing to show
};

enum class CheckStatus { ok, warn, fail, skipped };

std::string_view status_name(CheckStatus status) {
  switch (status) {
    case CheckStatus::ok:
      return "ok";
    case CheckStatus::warn:
      return "warn";
    case CheckStatus::fail:
      return "fail";
    case CheckStatus::skipped:
      return "skipped";
  }
  return "fail";
}

struct Check {
  std::string name{};
  CheckStatus status = CheckStatus::ok;
  std::string detail{};  // what was seen, one line
  Json data = Json::object();
};

struct Leftover {
  std::string kind;  // bucket | snapshot | access_key
  std::string name;
  std::string remove;  // the command line that removes it
};

struct DoctorResult {
  std::string endpoint;
  std::string iam_endpoint;
  bool tigris_host = false;
  std::string credential_source;
  std::string access_key_id;  // masked
  bool probed = false;
  std::string run_id;
  std::vector<Check> checks;
  std::vector<std::string> quirks;
  std::vector<Leftover> leftovers;
  bool interrupted = false;
};

Json to_json(const DoctorResult& result) {
  Json checks = Json::array();
  for (const auto& check : result.checks)
    checks.push_back({{"name", check.name},
                      {"status", status_name(check.status)},
                      {"detail", check.detail},
                      {"data", check.data}});
  Json leftovers = Json::array();
  for (const auto& left : result.leftovers)
    leftovers.push_back({{"kind", left.kind}, {"name", left.name}, {"remove", left.remove}});
  return Json{{"tfork_version", k_version},
              {"endpoint", result.endpoint},
              {"iam_endpoint", result.iam_endpoint},
              {"tigris_host", result.tigris_host},
              {"credential_source", output::json_or_null(result.credential_source)},
              {"access_key_id", output::json_or_null(result.access_key_id)},
              {"probe", result.probed},
              {"run_id", output::json_or_null(result.run_id)},
              {"checks", std::move(checks)},
              {"quirks", result.quirks},
              {"leftovers", std::move(leftovers)},
              {"interrupted", result.interrupted}};
}

std::string to_table(const DoctorResult& result) {
  output::Table table({"CHECK", "STATUS", "DETAIL"});
  for (const auto& check : result.checks)
    table.row({check.name, std::string(status_name(check.status)), check.detail});
  std::string text = table.render();
  if (result.probed) {
    std::string quirks;
    for (const auto& quirk : result.quirks)
      quirks += (quirks.empty() ? "" : ", ") + quirk;
    text += "quirks: " + (quirks.empty() ? std::string("none") : quirks) + "\n";
    if (result.leftovers.empty()) {
      text += "left behind: nothing\n";
    } else {
      text += "left behind (remove by hand):\n";
      for (const auto& left : result.leftovers)
        text += "  " + left.kind + " " + output::printable(left.name) + ": " + left.remove + "\n";
    }
  }
  return text;
}

// ---- what an answer was, in words

struct Answer {
  bool ok = false;        // 2xx
  bool answered = false;  // an HTTP response came back
  int status = 0;
  std::string code;
  std::string message;

  std::string text() const {
    if (!answered) return "no answer (" + message + ")";
    if (ok) return fmt::format("HTTP {}", status);
    return fmt::format("HTTP {} {}", status, code);
  }
  Json json() const {
    return Json{{"http_status", answered ? Json(status) : Json()},
                {"code", code.empty() ? Json() : Json(code)}};
  }
};

Answer answer_of(const http::Result& result, std::string_view operation) {
  Answer answer;
  answer.answered = result.has_value();
  if (result) answer.status = result->status;
  if (auto error = tigris::error_from_result(result, operation)) {
    answer.code = error->code;
    answer.message = error->message;
  } else {
    answer.ok = true;
  }
  return answer;
}

// "Thu, 03 Dec 2026 11:48:58 GMT" (RFC 9110 IMF-fixdate).
std::optional<std::chrono::system_clock::time_point> parse_http_date(std::string_view text) {
  std::tm tm{};
  std::istringstream in{std::string(text)};
  in.imbue(std::locale::classic());
  in >> std::get_time(&tm, "%a, %d %b %Y %H:%M:%S");
  if (in.fail()) return std::nullopt;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

bool is_loopback(std::string_view url) {
  auto host = url.substr(url.find("://") == std::string_view::npos ? 0 : url.find("://") + 3);
  if (host.starts_with('[')) return host.starts_with("[::1]");
  host = host.substr(0, host.find_first_of(":/"));
  return host == "localhost" || host.starts_with("127.");
}

// Virtual-hosted addressing needs a DNS name whose subdomains reach the service.
bool has_bucket_host_names(std::string_view url) {
  auto host = url.substr(url.find("://") == std::string_view::npos ? 0 : url.find("://") + 3);
  if (host.starts_with('[')) return false;
  host = host.substr(0, host.find_first_of(":/"));
  const bool numeric = host.find_first_not_of("0123456789.") == std::string_view::npos;
  return !host.empty() && !numeric && host != "localhost" && !host.ends_with(".localhost");
}

// ---- the probes

// One throwaway bucket (the run id), its forks, snapshots and one key. Every name a create
// was sent for is remembered before it is sent, so that clean_up removes it whatever the
// answer was (a cancelled or a 409 create may still have made it).
class Probe {
 public:
  Probe(tigris::Client& client, tigris::Client& cleanup, http::Transport& transport, std::string id,
        std::chrono::seconds wait)
      : client_(client),
        cleanup_(cleanup),
        transport_(transport),
        id_(std::move(id)),
        wait_(wait) {}

  void run(std::vector<Check>& checks);
  std::vector<Leftover> clean_up(Check& report);
  const std::vector<std::string>& quirks() const { return quirks_; }

 private:
  static bool stopped() { return cli::interrupted().load(); }
  void quirk(std::string_view name) {
    if (std::ranges::find(quirks_, name) == quirks_.end()) quirks_.emplace_back(name);
  }
  // Sleeps up to `how_long`, waking early on Ctrl-C.
  static void pause(std::chrono::milliseconds how_long) {
    const auto until = Clock::now() + how_long;
    while (Clock::now() < until && !stopped())
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  http::Result send(const tigris::Operation& operation) { return client_.send(operation); }
  std::string object_text(const std::string& bucket, const std::string& key, Answer& answer);

  Check make_bucket();
  Check settings_addressing();
  Check snapshot_delay();
  Check base_data();
  Check forks();
  Check parallel_forks();
  Check fork_locations();
  Check fork_listing();
  Check snapshot_paging();
  Check rebase();
  Check merge();
  Check snapshot_delete_gone();
  Check access_key_delete_twice();
  Check parent_delete();

  bool made_fork(const std::string& name, const http::Result& result, bool& answered_409);

  tigris::Client& client_;
  tigris::Client& cleanup_;
  http::Transport& transport_;
  std::string id_;
  std::chrono::seconds wait_;
  bool bucket_sent_ = false;
  bool snapshots_on_ = false;
  std::string base_snapshot_;
  std::string merge_fork_;
  std::string rebase_fork_;
  std::vector<std::string> forks_;  // every fork a create was sent for
  std::vector<std::string> keys_;   // keys minted and not yet deleted
  std::vector<std::string> quirks_;
};

void Probe::run(std::vector<Check>& checks) {
  using Step = Check (Probe::*)();
  struct Named {
    const char* name;
    Step step;
  };
  // Parent delete comes last: a gateway that deleted a parent with forks would end the run.
  static constexpr Named k_steps[] = {
      {"probe-bucket", &Probe::make_bucket},
      {"settings-addressing", &Probe::settings_addressing},
      {"snapshots-on-delay", &Probe::snapshot_delay},
      {"probe-data", &Probe::base_data},
      {"fork-create", &Probe::forks},
      {"parallel-forks", &Probe::parallel_forks},
      {"fork-locations", &Probe::fork_locations},
      {"fork-listing", &Probe::fork_listing},
      {"snapshot-paging", &Probe::snapshot_paging},
      {"rebase-own-writes", &Probe::rebase},
      {"merge-both-changed", &Probe::merge},
      {"snapshot-delete-gone", &Probe::snapshot_delete_gone},
      {"access-key-delete-twice", &Probe::access_key_delete_twice},
      {"parent-delete", &Probe::parent_delete},
  };
  bool blocked = false;  // a step every later one needs failed
  for (const auto& [name, step] : k_steps) {
    Check check;
    if (stopped()) {
      check = {name, CheckStatus::skipped, "interrupted before it ran"};
    } else if (blocked) {
      check = {name, CheckStatus::skipped, "an earlier probe failed (see above)"};
    } else {
      check = (this->*step)();
      check.name = name;
      if (stopped() && check.status == CheckStatus::fail)
        check = {name, CheckStatus::skipped, "interrupted while it ran"};
    }
    const bool essential = step == &Probe::make_bucket || step == &Probe::snapshot_delay ||
                           step == &Probe::base_data || step == &Probe::forks;
    if (essential && check.status == CheckStatus::fail) blocked = true;
    checks.push_back(std::move(check));
  }
}

Check Probe::make_bucket() {
  bucket_sent_ = true;
  const auto answer = answer_of(send(tigris::create_bucket(id_, false)), "CreateBucket");
  // A 409 is a bucket that was there before: not ours to delete afterwards.
  if (answer.status == 409) bucket_sent_ = false;
  if (!answer.ok)
    return {{}, CheckStatus::fail, "CreateBucket " + id_ + ": " + answer.text(), answer.json()};
  return {{},
          CheckStatus::ok,
          "made " + id_ + " (snapshots off; turned on next)",
          Json{{"bucket", id_}}};
}

// tigris-wire §10: the SDKs send the settings PATCH path-style; whether it is bound on
// <bucket>.host too is open. Path-style decides whether the probes go on.
Check Probe::settings_addressing() {
  Json data = Json::object();
  std::string virtual_text;
  const auto& settings = client_.settings();
  if (has_bucket_host_names(settings.endpoint)) {
    auto hosted = settings;
    hosted.path_style = false;
    tigris::Client hosted_client(hosted, transport_);
    // Asked on purpose the other way than tfork sends it (path-style, tigris-wire §10).
    auto patch = tigris::set_bucket_type(id_, true);
    patch.path_style = false;
    const auto result = hosted_client.send(patch);
    auto answer = answer_of(result, "PATCH bucket settings");
    if (answer.ok && result)
      if (auto refused = tigris::settings_error(*result)) answer.code = "status:error " + *refused;
    virtual_text = answer.text() + (answer.code.starts_with("status:") ? " " + answer.code : "");
    data["virtual_hosted"] = answer.json();
  } else {
    virtual_text = "not tried (" + settings.endpoint + " has no bucket host names)";
    data["virtual_hosted"] = nullptr;
  }
  auto path = settings;
  path.path_style = true;
  tigris::Client path_client(path, transport_);
  const auto result = path_client.send(tigris::set_bucket_type(id_, true));
  const auto answer = answer_of(result, "PATCH bucket settings");
  std::optional<std::string> refused;
  if (answer.ok && result) refused = tigris::settings_error(*result);
  data["path_style"] = answer.json();
  const auto detail = "path-style: " + answer.text() + (refused ? " but " + *refused : "") +
                      "; virtual-hosted: " + virtual_text;
  if (!answer.ok || refused) return {{}, CheckStatus::fail, detail, data};
  return {{}, CheckStatus::ok, detail, data};
}

// tigris-wire §10: a bucket-type change takes a while; what does a snapshot sent meanwhile
// answer? Bounded by --wait.
Check Probe::snapshot_delay() {
  const auto start = Clock::now();
  std::optional<Answer> refusal;
  bool head_said_on = false;
  int attempts = 0;
  while (!stopped()) {
    ++attempts;
    const auto result = send(tigris::take_snapshot(id_, std::string("tfork doctor first")));
    const auto answer = answer_of(result, "CreateBucketSnapshot");
    if (answer.ok) {
      snapshots_on_ = true;
      break;
    }
    if (!refusal) {
      refusal = answer;
      const auto head = send(tigris::head_bucket(id_));
      if (head && head->status == 200)
        head_said_on = tigris::parse_head_bucket(*head).snapshots_enabled;
    }
    if (Clock::now() - start >= wait_ || !answer.answered) break;
    pause(std::chrono::milliseconds(500));
  }
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  Json data{{"waited_ms", waited},
            {"attempts", attempts},
            {"refused_meanwhile", refusal ? refusal->json() : Json()},
            {"head_bucket_said_on", refusal ? Json(head_said_on) : Json()}};
  if (!snapshots_on_)
    return {{},
            CheckStatus::fail,
            fmt::format("snapshots not on after {} ms; a snapshot answers {}", waited,
                        refusal ? refusal->text() : std::string("nothing")),
            data};
  if (!refusal)
    return {{}, CheckStatus::ok, "snapshots on at once: the first snapshot was taken", data};
  // The setting shows, yet the bucket still refuses snapshots: serve --quirks settings-delay.
  quirk("settings-delay");
  return {{},
          CheckStatus::warn,
          fmt::format("snapshots on after {} ms; meanwhile a snapshot answered {} (HeadBucket said "
                      "snapshots {})",
                      waited, refusal->text(), head_said_on ? "on" : "off"),
          data};
}

Check Probe::base_data() {
  for (const auto& key : {"both-changed.txt", "fork-deletes.txt"}) {
    const auto answer =
        answer_of(send(tigris::put_object(id_, key, "base", "text/plain")), "PutObject");
    if (!answer.ok)
      return {{}, CheckStatus::fail, std::string("PutObject ") + key + ": " + answer.text()};
  }
  const auto result = send(tigris::take_snapshot(id_, std::string("tfork doctor base")));
  const auto answer = answer_of(result, "CreateBucketSnapshot");
  const auto version = answer.ok ? tigris::parse_snapshot_version(*result) : std::nullopt;
  if (!version)
    return {{},
            CheckStatus::fail,
            "the base snapshot: " + (answer.ok ? "no X-Tigris-Snapshot-Version" : answer.text())};
  base_snapshot_ = *version;
  return {{},
          CheckStatus::ok,
          "two objects and snapshot " + base_snapshot_,
          Json{{"snapshot", base_snapshot_}}};
}

// Whether a create of fork `name` made it: 2xx, or a 409 after which HeadBucket shows it as a
// fork of the probe bucket (serve --quirks fork-conflict-409).
bool Probe::made_fork(const std::string& name, const http::Result& result, bool& answered_409) {
  const auto answer = answer_of(result, "CreateBucketFork");
  if (answer.ok) return true;
  if (answer.status != 409) return false;
  const auto head = send(tigris::head_bucket(name));
  if (head && head->status == 200 && tigris::parse_head_bucket(*head).fork_source == id_) {
    answered_409 = true;
    return true;
  }
  // Someone else's bucket of that name (visible, or refused to us): never delete it.
  if (head && (head->status == 200 || head->status == 403)) std::erase(forks_, name);
  return false;
}

Check Probe::forks() {
  merge_fork_ = id_ + "-m";
  rebase_fork_ = id_ + "-r";
  std::string detail;
  bool conflict = false;
  for (const auto& name : {merge_fork_, rebase_fork_}) {
    forks_.push_back(name);
    const auto result = send(tigris::create_fork(name, id_, base_snapshot_));
    if (!made_fork(name, result, conflict))
      return {{},
              CheckStatus::fail,
              "CreateBucketFork " + name + ": " + answer_of(result, "CreateBucketFork").text()};
  }
  if (conflict) {
    quirk("fork-conflict-409");
    return {{},
            CheckStatus::warn,
            "made " + merge_fork_ + " and " + rebase_fork_ +
                ", but a create was answered 409 although the fork was made"};
  }
  return {{},
          CheckStatus::ok,
          "made " + merge_fork_ + " and " + rebase_fork_ + " of " + base_snapshot_};
}

// tigris-wire §10: 32 concurrent CreateBucketFork of one snapshot.
Check Probe::parallel_forks() {
  constexpr int k_count = 32;
  std::vector<tigris::Operation> creates;
  std::vector<std::string> names;
  for (int i = 1; i <= k_count; ++i) {
    names.push_back(fmt::format("{}-p{}", id_, i));
    forks_.push_back(names.back());
    creates.push_back(tigris::create_fork(names.back(), id_, base_snapshot_));
  }
  const auto start = Clock::now();
  const auto results = client_.send_all(creates, k_count);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  int made = 0, conflicts = 0;
  std::map<std::string, int> failures;  // answer text -> count
  for (std::size_t i = 0; i < results.size(); ++i) {
    bool answered_409 = false;
    if (made_fork(names[i], results[i], answered_409)) {
      ++made;
      conflicts += answered_409 ? 1 : 0;
    } else {
      ++failures[answer_of(results[i], "CreateBucketFork").text()];
    }
  }
  Json data{{"count", k_count}, {"made", made}, {"answered_409_but_made", conflicts}, {"ms", ms}};
  std::string failed;
  for (const auto& [text, count] : failures)
    failed += fmt::format("{}{} × {}", failed.empty() ? "" : ", ", count, text);
  if (conflicts > 0) quirk("fork-conflict-409");
  if (made < k_count)
    return {{},
            CheckStatus::fail,
            fmt::format("{} of {} forks made in {} ms; failed: {}", made, k_count, ms, failed),
            data};
  if (conflicts > 0)
    return {{},
            CheckStatus::warn,
            fmt::format("{} of {} made in {} ms, {} of them answered 409 although made", made,
                        k_count, ms, conflicts),
            data};
  return {{}, CheckStatus::ok, fmt::format("{} of {} made in {} ms", made, k_count, ms), data};
}

// tigris-wire §10: does a fork carry its source's locations?
Check Probe::fork_locations() {
  auto regions = [&](const std::string& bucket) -> std::optional<std::string> {
    const auto head = send(tigris::head_bucket(bucket));
    if (!head || head->status != 200) return std::nullopt;
    const auto value = head->header("X-Tigris-Regions");
    return value ? std::string(*value) : std::string();
  };
  const auto source = regions(id_);
  const auto fork = regions(merge_fork_);
  if (!source || !fork) return {{}, CheckStatus::warn, "HeadBucket of the source or fork failed"};
  Json data{{"source", output::json_or_null(*source)}, {"fork", output::json_or_null(*fork)}};
  if (source->empty() && fork->empty())
    return {{},
            CheckStatus::skipped,
            "HeadBucket names no locations (no X-Tigris-Regions) on the source or the fork",
            data};
  if (*source == *fork)
    return {{}, CheckStatus::ok, "the fork has its source's locations (" + *fork + ")", data};
  return {{},
          CheckStatus::warn,
          "source at '" + *source + "', fork at '" + *fork + "': not inherited",
          data};
}

// tigris-wire §7.4: a gateway before 1.320.0 ignores X-Tigris-Fork (serve --quirks
// fork-listing-ignores-header). Listings may lag (§10): polled up to --wait.
Check Probe::fork_listing() {
  const auto start = Clock::now();
  while (!stopped()) {
    const auto result = send(tigris::list_forks(id_));
    const auto answer = answer_of(result, "ListBuckets (X-Tigris-Fork)");
    if (!answer.ok) return {{}, CheckStatus::warn, "the fork listing answers " + answer.text()};
    const auto page = tigris::parse_bucket_list_json(*result);
    if (!page) return {{}, CheckStatus::warn, "the fork listing is unreadable: " + page.error()};
    const auto not_ours = std::ranges::count_if(page->buckets, [&](const auto& entry) {
      return !entry.has_fork_info || entry.source != id_;
    });
    const auto listed = static_cast<long>(page->buckets.size()) - not_ours;
    Json data{{"listed", listed}, {"other_entries", not_ours}, {"made", forks_.size()}};
    if (not_ours > 0) {
      quirk("fork-listing-ignores-header");
      return {
          {},
          CheckStatus::warn,
          fmt::format("X-Tigris-Fork ignored: the listing holds {} bucket(s) that are not forks "
                      "of {} (clients must filter the full listing)",
                      not_ours, id_),
          data};
    }
    if (listed >= static_cast<long>(forks_.size()) || Clock::now() - start >= wait_) {
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
      data["ms"] = ms;
      if (listed >= static_cast<long>(forks_.size()))
        return {
            {}, CheckStatus::ok, fmt::format("all {} forks listed after {} ms", listed, ms), data};
      return {{},
              CheckStatus::warn,
              fmt::format("{} of {} forks listed after {} ms", listed, forks_.size(), ms),
              data};
    }
    pause(std::chrono::milliseconds(500));
  }
  return {{}, CheckStatus::skipped, "interrupted"};
}

// tigris-wire §9: a gateway may echo the continuation token on the last page (serve --quirks
// snapshot-token-echo). One snapshot per page.
Check Probe::snapshot_paging() {
  std::string token;
  int pages = 0, listed = 0;
  while (!stopped() && pages < 50) {
    const std::string sent = token;
    const auto result = send(tigris::list_snapshots(id_, sent, 1));
    const auto answer = answer_of(result, "ListBucketSnapshots");
    if (!answer.ok) return {{}, CheckStatus::warn, "ListBucketSnapshots answers " + answer.text()};
    const auto page = tigris::parse_snapshot_list(*result);
    if (!page) return {{}, CheckStatus::warn, "an unreadable snapshot page: " + page.error()};
    ++pages;
    listed += static_cast<int>(page->snapshots.size());
    token = page->continuation_token;
    Json data{{"pages", pages}, {"listed", listed}};
    if (!token.empty() && token == sent) {
      quirk("snapshot-token-echo");
      return {{},
              CheckStatus::warn,
              fmt::format("page {} echoes the token it was sent (clients must stop on a repeated "
                          "token); {} snapshots listed",
                          pages, listed),
              data};
    }
    if (token.empty() || page->snapshots.empty())
      return {{},
              CheckStatus::ok,
              fmt::format("{} snapshots over {} pages of one; the last page has no token", listed,
                          pages),
              data};
  }
  return {{}, CheckStatus::warn, fmt::format("still paging after {} pages", pages)};
}

std::string Probe::object_text(const std::string& bucket, const std::string& key, Answer& answer) {
  const auto result = send(tigris::get_object(bucket, key));
  answer = answer_of(result, "GetObject");
  return answer.ok ? result->body : std::string();
}

// tigris-wire §10: rebase of a fork with writes of its own; do they survive, and what is the
// fork's snapshot afterwards? A 2xx without X-Tigris-Snapshot-Version is serve --quirks
// merge-no-version-header.
Check Probe::rebase() {
  const auto own = answer_of(
      send(tigris::put_object(rebase_fork_, "fork-own.txt", "fork", "text/plain")), "PutObject");
  const auto parent = answer_of(
      send(tigris::put_object(id_, "both-changed.txt", "parent", "text/plain")), "PutObject");
  if (!own.ok || !parent.ok)
    return {{}, CheckStatus::fail, "writing before the rebase: " + (own.ok ? parent : own).text()};
  const auto result = send(tigris::rebase_fork(rebase_fork_));
  const auto answer = answer_of(result, "RebaseFork");
  if (!answer.ok) return {{}, CheckStatus::fail, "rebase answers " + answer.text(), answer.json()};
  const auto version = tigris::parse_snapshot_version(*result);
  Answer read_own, read_parent;
  const auto own_text = object_text(rebase_fork_, "fork-own.txt", read_own);
  const auto parent_text = object_text(rebase_fork_, "both-changed.txt", read_parent);
  std::optional<std::string> snapshot_after;
  if (const auto head = send(tigris::head_bucket(rebase_fork_)); head && head->status == 200)
    snapshot_after = tigris::parse_head_bucket(*head).fork_source_snapshot;
  const bool survived = read_own.ok && own_text == "fork";
  const bool sees_parent = read_parent.ok && parent_text == "parent";
  Json data{{"version_header", output::json_or_null(version.value_or(""))},
            {"own_write_survived", survived},
            {"sees_parent_now", sees_parent},
            {"fork_snapshot_after", output::json_or_null(snapshot_after.value_or(""))}};
  const auto detail = fmt::format(
      "the fork's own write {}; it {} the parent's later write; fork snapshot now {}; answer {}",
      survived ? "survived" : "is gone (" + read_own.text() + ")",
      sees_parent ? "sees" : "does not see", snapshot_after.value_or("-"),
      version ? "version " + *version : "without X-Tigris-Snapshot-Version");
  if (!version) {
    quirk("merge-no-version-header");
    return {{}, CheckStatus::warn, detail, data};
  }
  return {{}, CheckStatus::ok, detail, data};
}

// tigris-wire §10: merge of a key changed on both sides (who wins) and of a key deleted in
// the fork.
Check Probe::merge() {
  const auto changed = answer_of(
      send(tigris::put_object(merge_fork_, "both-changed.txt", "fork", "text/plain")), "PutObject");
  const auto deleted =
      answer_of(send(tigris::delete_object(merge_fork_, "fork-deletes.txt")), "DeleteObject");
  if (!changed.ok || !deleted.ok)
    return {
        {}, CheckStatus::fail, "writing in the fork: " + (changed.ok ? deleted : changed).text()};
  const auto result = send(tigris::merge_fork(merge_fork_, id_));
  const auto answer = answer_of(result, "MergeFork");
  if (!answer.ok) return {{}, CheckStatus::fail, "merge answers " + answer.text(), answer.json()};
  const auto version = tigris::parse_snapshot_version(*result);
  Answer read_both, read_deleted;
  const auto both = object_text(id_, "both-changed.txt", read_both);
  object_text(id_, "fork-deletes.txt", read_deleted);
  const std::string winner = !read_both.ok      ? "neither (" + read_both.text() + ")"
                             : both == "fork"   ? "the fork"
                             : both == "parent" ? "the parent"
                                                : "neither ('" + output::printable(both) + "')";
  const std::string deletion = read_deleted.ok              ? "kept in the parent"
                               : read_deleted.status == 404 ? "deleted in the parent too"
                                                            : read_deleted.text();
  Json data{{"version_header", output::json_or_null(version.value_or(""))},
            {"both_changed_winner", winner},
            {"fork_deleted_key", deletion}};
  const auto detail = fmt::format(
      "a key changed on both sides: {} wins; a key the fork deleted: {}; answer {}", winner,
      deletion, version ? "version " + *version : "without X-Tigris-Snapshot-Version");
  if (!version) {
    quirk("merge-no-version-header");
    return {{}, CheckStatus::warn, detail, data};
  }
  return {{}, CheckStatus::ok, detail, data};
}

// tigris-wire §9, §10: DeleteBucketSnapshot of a deleted and of a never-existing version.
// Anything but NoSuchSnapshot for both is worth knowing; a 400 is serve --quirks
// snapshot-gone-400.
Check Probe::snapshot_delete_gone() {
  const auto taken = send(tigris::take_snapshot(id_, std::string("tfork doctor delete")));
  const auto version =
      taken && taken->status / 100 == 2 ? tigris::parse_snapshot_version(*taken) : std::nullopt;
  if (!version)
    return {{},
            CheckStatus::fail,
            "taking the snapshot to delete: " + answer_of(taken, "CreateBucketSnapshot").text()};
  const auto first =
      answer_of(send(tigris::delete_snapshot(id_, *version)), "DeleteBucketSnapshot");
  if (!first.ok)
    return {{}, CheckStatus::fail, "deleting snapshot " + *version + ": " + first.text()};
  const auto again =
      answer_of(send(tigris::delete_snapshot(id_, *version)), "DeleteBucketSnapshot");
  // A version one nanosecond before the base snapshot: a valid version that no snapshot has.
  const auto never = std::to_string(std::stoull(base_snapshot_) - 1);
  const auto unknown = answer_of(send(tigris::delete_snapshot(id_, never)), "DeleteBucketSnapshot");
  Json data{{"deleted_again", again.json()}, {"never_existed", unknown.json()}};
  const auto detail =
      fmt::format("deleted again: {}; never existed: {}", again.text(), unknown.text());
  const bool expected = again.code == "NoSuchSnapshot" && unknown.code == "NoSuchSnapshot";
  if (expected) return {{}, CheckStatus::ok, detail, data};
  if ((again.status == 400 && again.code != "NoSuchSnapshot") ||
      (unknown.status == 400 && unknown.code != "NoSuchSnapshot"))
    quirk("snapshot-gone-400");
  return {{},
          CheckStatus::warn,
          detail + " (not NoSuchSnapshot: clients must take this for gone)",
          data};
}

// tigris-wire §10: DeleteAccessKey of a deleted key. An IAM error with only a Message is
// serve --quirks iam-message-errors.
Check Probe::access_key_delete_twice() {
  const auto created =
      send(iam::create_access_key(id_ + "-key", id_, iam::Role::editor, iam::new_uuid()));
  const auto made = answer_of(created, "CreateAccessKeyWithBucketsRole");
  if (!made.ok) return {{}, CheckStatus::fail, "minting a key: " + made.text()};
  const auto key = iam::parse_created_key(*created);
  if (!key) return {{}, CheckStatus::fail, "an unreadable key answer: " + key.error()};
  keys_.push_back(key->id);
  const auto first = answer_of(send(iam::delete_access_key(key->id)), "DeleteAccessKey");
  if (!first.ok) return {{}, CheckStatus::fail, "deleting the key: " + first.text()};
  std::erase(keys_, key->id);
  const auto result = send(iam::delete_access_key(key->id));
  const auto again = answer_of(result, "DeleteAccessKey");
  bool message_only = false;
  if (result && !again.ok) {
    const auto body = nlohmann::json::parse(result->body, nullptr, false);
    message_only = body.is_object() && body.contains("Message") && !body.contains("Code") &&
                   !body.contains("code");
  }
  Json data{{"deleted_again", again.json()}, {"message_only_error", message_only}};
  if (message_only) quirk("iam-message-errors");
  const auto detail = "deleted again: " + again.text() +
                      (message_only ? " with only {\"Message\": \"<Code>: …\"}" : "");
  if (!again.ok && again.status == 404 && !message_only) return {{}, CheckStatus::ok, detail, data};
  return {{}, CheckStatus::warn, detail, data};
}

// tigris-wire §7.2, §9: deleting a parent that still has forks, without and with force.
Check Probe::parent_delete() {
  const auto plain = answer_of(send(tigris::delete_bucket(id_, false)), "DeleteBucket");
  const auto forced =
      plain.ok ? plain : answer_of(send(tigris::delete_bucket(id_, true)), "DeleteBucket");
  Json data{{"without_force", plain.json()}, {"with_force", forced.json()}};
  const auto detail = "without force: " + plain.text() + "; with force: " + forced.text();
  if (plain.ok || forced.ok)
    return {{}, CheckStatus::fail, detail + " (a parent with forks was deleted)", data};
  auto has_children_400 = [](const Answer& answer) {
    return answer.status == 400 && answer.code == "BucketHasChildren";
  };
  if (has_children_400(plain) || has_children_400(forced)) {
    quirk("parent-delete-400");
    return {{}, CheckStatus::warn, detail, data};
  }
  if (forced.status == 409) return {{}, CheckStatus::ok, detail, data};
  return {{}, CheckStatus::warn, detail, data};
}

// Children first: keys, then forks, then the source's snapshots, then the source. A gateway
// may still count deleted forks as children for a while (tigris-wire §7.3): the source's
// delete is retried on a conflict for up to --wait.
std::vector<Leftover> Probe::clean_up(Check& report) {
  std::vector<Leftover> left;
  int keys = 0, buckets = 0, snapshots = 0;
  for (const auto& key : keys_) {
    const auto result = cleanup_.send(iam::delete_access_key(key));
    const auto error = tigris::error_from_result(result, "DeleteAccessKey");
    if (!error || key_gone(*error)) {
      ++keys;
    } else {
      left.push_back(
          {"access_key", key,
           "delete access key " + key + " (e.g. tigris access-keys delete " + key + ")"});
    }
  }
  std::vector<tigris::Operation> deletes;
  for (const auto& fork : forks_)
    deletes.push_back(tigris::delete_bucket(fork, true));
  const auto results = cleanup_.send_all(deletes, 32);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto error = tigris::error_from_result(results[i], "DeleteBucket");
    if (!error || bucket_gone(*error)) {
      ++buckets;
    } else {
      left.push_back({"bucket", forks_[i], "tfork bucket rm " + forks_[i] + " --force"});
    }
  }
  const bool forks_gone = left.empty();
  if (bucket_sent_ && forks_gone) {
    try {
      for (const auto& snapshot : tigris::list_all_snapshots(cleanup_, id_)) {
        const auto error = tigris::error_from_result(
            cleanup_.send(tigris::delete_snapshot(id_, snapshot.version)), "DeleteBucketSnapshot");
        if (!error || snapshot_gone(*error)) ++snapshots;
      }
    } catch (const TforkError&) {
      // A bucket that was never made (or is gone) has no snapshots to list.
    }
    // A fork the service still lists keeps its parent (409): retried with the batch runner's
    // backoff, within the same wait as the forks'.
    const auto start = std::chrono::steady_clock::now();
    const workflow::Backoff backoff{
        .budget = std::chrono::duration_cast<std::chrono::milliseconds>(wait_)};
    for (int tries = 1;; ++tries) {
      const auto error = tigris::error_from_result(cleanup_.send(tigris::delete_bucket(id_, true)),
                                                   "DeleteBucket");
      if (!error || bucket_gone(*error)) {
        ++buckets;
        break;
      }
      const auto pause =
          error->kind == ErrorKind::conflict ? backoff.wait(tries, start) : std::nullopt;
      if (!pause) {
        left.push_back({"bucket", id_, "tfork bucket rm " + id_ + " --force"});
        break;
      }
      std::this_thread::sleep_for(*pause);
    }
  } else if (bucket_sent_) {
    left.push_back({"bucket", id_,
                    "tfork bucket rm " + id_ + " --force (after its forks: delete them first)"});
  }
  report.data = Json{{"buckets_deleted", buckets},
                     {"snapshots_deleted", snapshots},
                     {"keys_deleted", keys},
                     {"left", left.size()}};
  if (left.empty()) {
    report.status = CheckStatus::ok;
    report.detail = fmt::format("removed {} buckets, {} snapshots and {} keys it had left", buckets,
                                snapshots, keys);
  } else {
    report.status = CheckStatus::fail;
    report.detail = fmt::format("{} things are left behind (listed below)", left.size());
  }
  return left;
}

// ---- the configuration checks

struct Configuration {
  std::optional<cli::ResolvedCredentials> credentials;
  std::unique_ptr<http::Transport> transport;          // cancelled by Ctrl-C
  std::unique_ptr<http::Transport> cleanup_transport;  // not cancelled: cleanup must finish
  std::unique_ptr<tigris::Client> client;
  std::unique_ptr<tigris::Client> cleanup_client;
};

cli::CommandResult run_doctor(const DoctorOptions& options, cli::Context& context) {
  if (options.probe && context.options.dry_run)
    usage_error(
        "doctor --probe makes and removes a bucket; it has no --dry-run (leave out "
        "--probe for the configuration checks alone, which send one ListBuckets)");
  DoctorResult result;
  const auto& config = context.config();
  result.endpoint = config.endpoint;
  result.iam_endpoint = config.iam_endpoint;
  result.tigris_host = cli::is_tigris_host(config.endpoint);

  Configuration setup;
  {
    Check check{"credentials"};
    try {
      setup.credentials = cli::resolve_credentials(context.options.config, context.env());
      // Which of the chain's steps chose a profile: the flag, AWS_PROFILE or the default.
      auto source = setup.credentials->source;
      if (!context.options.config.profile.empty())
        source += ", chosen by --profile";
      else if (source.starts_with("profile '"))
        source +=
            context.env()("AWS_PROFILE") ? ", chosen by AWS_PROFILE" : ", the default profile";
      setup.credentials->source = source;
      result.credential_source = source;
      result.access_key_id = masked_key_id(setup.credentials->credentials.access_key_id);
      check.detail =
          "key " + result.access_key_id + " from " + setup.credentials->source +
          (setup.credentials->credentials.session_token.empty() ? "" : ", with a session token");
      check.data = Json{{"source", setup.credentials->source},
                        {"access_key_id", result.access_key_id},
                        {"session_token", !setup.credentials->credentials.session_token.empty()}};
    } catch (const TforkError& error) {
      check.status = CheckStatus::fail;
      check.detail = error.error().message;
    }
    result.checks.push_back(std::move(check));
  }

  Check endpoint{"endpoint"};
  endpoint.detail = fmt::format(
      "{} ({}); IAM {}; {} addressing", config.endpoint,
      result.tigris_host ? "a Tigris host" : "not a Tigris host: a local or other S3 store",
      config.iam_endpoint, config.path_style ? "path-style" : "virtual-hosted");
  endpoint.data = Json{{"tigris_host", result.tigris_host},
                       {"path_style", config.path_style},
                       {"region", config.region}};

  Check tls{"tls"};
  Check clock{"clock"};
  Check key{"key"};
  const bool https = config.endpoint.starts_with("https://");
  if (!setup.credentials) {
    for (auto* check : {&tls, &clock, &key}) {
      check->status = CheckStatus::skipped;
      check->detail = "no credentials";
    }
  } else {
    auto transport_options = cli::transport_options(context.options, config);
    setup.transport.reset(modules::curl().make_transport(transport_options));
    transport_options.cancel = nullptr;
    setup.cleanup_transport.reset(modules::curl().make_transport(transport_options));
    tigris::ClientSettings settings{config.endpoint, config.iam_endpoint, config.region,
                                    config.path_style, setup.credentials->credentials};
    setup.client = std::make_unique<tigris::Client>(settings, *setup.transport);
    setup.cleanup_client = std::make_unique<tigris::Client>(settings, *setup.cleanup_transport);

    const auto listed = setup.client->send(tigris::list_buckets_with_fork_info(""));
    const auto local_now = std::chrono::system_clock::now();
    const auto answer = answer_of(listed, "ListBuckets");
    // The key.
    if (answer.ok) {
      key.detail = "ListBuckets signed with it is accepted";
    } else if (!answer.answered) {
      key.status = CheckStatus::skipped;
      key.detail = "no answer from the endpoint";
    } else {
      key.status = CheckStatus::fail;
      const bool auth = kind_for_service_error(answer.code, answer.status) == ErrorKind::auth;
      key.detail = "ListBuckets is refused: " + answer.text() + " (" + answer.message + ")";
      if (answer.code == "SignatureDoesNotMatch")
        key.detail += "; the secret does not belong to key " + result.access_key_id + " from " +
                      result.credential_source;
      else if (answer.code == "InvalidAccessKeyId")
        key.detail += "; the service does not know key " + result.access_key_id;
      else if (auth)
        key.detail += "; key " + result.access_key_id + " from " + result.credential_source;
    }
    key.data = answer.json();
    // The endpoint answered at all?
    if (!answer.answered) {
      endpoint.status = CheckStatus::fail;
      endpoint.detail += "; unreachable: " + answer.message;
    }
    // TLS.
    const bool tls_failed = !listed && listed.error().kind == http::TransportError::Kind::tls;
    if (!https) {
      tls.status = is_loopback(config.endpoint) ? CheckStatus::ok : CheckStatus::warn;
      tls.detail = is_loopback(config.endpoint)
                       ? "plain HTTP to a loopback address (a local store)"
                       : "plain HTTP to another host: requests and data travel unencrypted";
    } else if (tls_failed) {
      tls.status = CheckStatus::fail;
      tls.detail = "certificate verification failed: " + listed.error().message;
    } else if (context.options.no_verify_ssl) {
      tls.status = CheckStatus::warn;
      tls.detail = "HTTPS with certificate verification off (--no-verify-ssl)";
    } else if (!answer.answered) {
      tls.status = CheckStatus::skipped;
      tls.detail = "no connection was made";
    } else {
      tls.detail = "HTTPS; certificate verified (" +
                   (config.ca_bundle.empty() ? std::string("system CA store")
                                             : "CA bundle " + config.ca_bundle) +
                   ")";
    }
    tls.data = Json{{"https", https}, {"verify", !context.options.no_verify_ssl}};
    // The clock, against the server's Date header (SigV4 allows 15 minutes).
    const auto date = listed ? listed->header("Date") : std::nullopt;
    const auto server_now = date ? parse_http_date(*date) : std::nullopt;
    if (!server_now) {
      clock.status = CheckStatus::skipped;
      clock.detail = answer.answered ? "the answer has no readable Date header" : "no answer";
    } else {
      const auto skew =
          std::chrono::duration_cast<std::chrono::seconds>(local_now - *server_now).count();
      clock.data = Json{{"skew_seconds", skew}, {"server_date", std::string(*date)}};
      const auto size = std::llabs(skew);
      clock.detail =
          size <= 1 ? "in step with the server (within the Date header's second)"
                    : fmt::format("{} s {} the server", size, skew > 0 ? "ahead of" : "behind");
      if (size > 15 * 60) {
        clock.status = CheckStatus::fail;
        clock.detail += ": beyond SigV4's 15 minutes, every request is refused; set the clock";
      } else if (size > 5) {
        clock.status = CheckStatus::warn;
        clock.detail += ": set the clock (SigV4 refuses beyond 15 minutes)";
      }
    }
  }
  result.checks.push_back(std::move(endpoint));
  result.checks.push_back(std::move(tls));
  result.checks.push_back(std::move(clock));
  const bool key_ok = key.status == CheckStatus::ok;
  result.checks.push_back(std::move(key));

  // The IAM endpoint with the same key (fork create mints keys there). A key scoped to
  // buckets may not manage keys: a warning, not a failure.
  Check iam_check{"iam"};
  if (!key_ok) {
    iam_check.status = CheckStatus::skipped;
    iam_check.detail = "the key check did not pass";
  } else {
    const auto answer = answer_of(setup.client->send(iam::list_access_keys("")), "ListAccessKeys");
    iam_check.data = answer.json();
    if (answer.ok) {
      iam_check.detail = "ListAccessKeys at " + config.iam_endpoint + " is accepted";
    } else if (!answer.answered) {
      iam_check.status = CheckStatus::fail;
      iam_check.detail = config.iam_endpoint + " is unreachable: " + answer.message;
    } else {
      iam_check.status = CheckStatus::warn;
      iam_check.detail = "ListAccessKeys at " + config.iam_endpoint +
                         " is refused: " + answer.text() +
                         " (minting fork keys will fail with this key)";
    }
  }
  result.checks.push_back(std::move(iam_check));

  if (options.probe) {
    result.probed = true;
    const bool ready = setup.client && key_ok;
    if (!ready) {
      result.checks.push_back(
          {"probe", CheckStatus::skipped, "the key check did not pass; nothing was made"});
    } else {
      result.run_id = "tfork-doctor-" + crypto::random_hex(4);
      Probe probe(*setup.client, *setup.cleanup_client, *setup.transport, result.run_id,
                  std::chrono::seconds(options.wait_seconds));
      try {
        probe.run(result.checks);
      } catch (const std::exception& error) {
        result.checks.push_back(
            {"probe", CheckStatus::fail, std::string("stopped: ") + error.what()});
      }
      Check cleanup{"cleanup"};
      result.leftovers = probe.clean_up(cleanup);
      result.checks.push_back(std::move(cleanup));
      result.quirks = probe.quirks();
    }
  }

  result.interrupted = cli::interrupted().load();
  std::string failed;
  for (const auto& check : result.checks)
    if (check.status == CheckStatus::fail) failed += (failed.empty() ? "" : ", ") + check.name;
  auto command_result = cli::document(to_json(result), to_table(result));
  if (result.interrupted) {
    command_result.error = Error{ErrorKind::interrupted,
                                 "Interrupted",
                                 result.leftovers.empty()
                                     ? "interrupted; everything the probes made was removed"
                                     : "interrupted; some of what the probes made is left (listed)",
                                 0,
                                 {}};
  } else if (!failed.empty()) {
    command_result.error =
        Error{ErrorKind::other, "DoctorFoundProblems", "failed checks: " + failed, 0, {}};
  }
  return command_result;
}

}  // namespace

void register_doctor(CLI::App& root, cli::Context& context) {
  auto options = std::make_shared<DoctorOptions>();
  auto* command = root.add_subcommand(
      "doctor", "Check credentials, endpoint, TLS, clock and key; --probe asks the service");
  command->add_flag("--probe", options->probe,
                    "Also probe the service's open behaviours on a throwaway bucket, forks and "
                    "key named tfork-doctor-<random>, removed afterwards");
  command
      ->add_option("--wait", options->wait_seconds,
                   "Seconds to wait at most for a setting or a listing to show (default 30)")
      ->check(cli::whole_number("--wait", 1, 600))
      ->type_name("SECONDS");
  cli::describe(*command, cli::honours::client, {"tfork doctor", "tfork doctor --probe --json"});
  command->footer(
      "Each check is ok, warn, fail or skipped. quirks: what the gateway was seen to do, by the\n"
      "names of tfork serve --quirks. No secret is ever printed.\n"
      "Exit codes: 0 no check failed (warnings allowed), 1 a check failed or something was left\n"
      "behind, 64 usage, 130/143 interrupted (the probes' bucket, forks and key are removed "
      "first).");
  cli::on_run(*command, context, [options, &context] { return run_doctor(*options, context); });
}

}  // namespace tfork::commands
