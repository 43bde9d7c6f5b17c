// SPDX-License-Identifier: Apache-2.0
#pragma once
// A tiny in-memory Tigris behind FakeTransport, for the fork workflow tests: buckets with
// their fork source, snapshots, and scoped keys, answering just the operations `fork create`
// and `teardown` send, in the wire shapes of tigris-wire.md. Tests inject failures with
// `fail_when`.

#include "tfork/tigris/client.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fake_transport.hpp"
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

namespace tfork::testing {

// A fresh directory under the system's temp directory, removed with everything in it.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           fmt::format("tfork-component-{}-{}", ::getpid(), counter++);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

inline const std::string k_endpoint = "http://127.0.0.1:9000";

struct ParsedRequest {
  std::string method;
  std::string bucket;                        // first path segment
  std::map<std::string, std::string> query;  // decoded
  std::map<std::string, std::string> form;   // decoded body (IAM)
  const http::Request* raw = nullptr;
  std::optional<std::string> header(std::string_view name) const {
    auto value = http::find_header(raw->headers, name);
    return value ? std::optional<std::string>(std::string(*value)) : std::nullopt;
  }
};

inline std::string percent_decode(std::string_view text, bool plus_is_space) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      out += static_cast<char>(std::stoi(std::string(text.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else if (text[i] == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += text[i];
    }
  }
  return out;
}

inline std::map<std::string, std::string> parse_pairs(std::string_view text, bool plus_is_space) {
  std::map<std::string, std::string> out;
  while (!text.empty()) {
    auto amp = text.find('&');
    auto pair = text.substr(0, amp);
    auto eq = pair.find('=');
    out[percent_decode(pair.substr(0, eq), plus_is_space)] =
        eq == std::string_view::npos ? "" : percent_decode(pair.substr(eq + 1), plus_is_space);
    if (amp == std::string_view::npos) break;
    text.remove_prefix(amp + 1);
  }
  return out;
}

inline ParsedRequest parse_request(const http::Request& request) {
  ParsedRequest parsed;
  parsed.raw = &request;
  parsed.method = request.method;
  std::string_view url = request.url;
  url.remove_prefix(k_endpoint.size());
  auto question = url.find('?');
  auto path = url.substr(0, question);
  if (question != std::string_view::npos)
    parsed.query = parse_pairs(url.substr(question + 1), false);
  if (path.size() > 1) {
    path.remove_prefix(1);
    parsed.bucket = percent_decode(path.substr(0, path.find('/')), false);
  }
  if (request.method == "POST") parsed.form = parse_pairs(request.body, true);
  return parsed;
}

inline http::Response xml_error(int status, std::string_view code) {
  return http::Response{
      status,
      {{"Content-Type", "application/xml"}, {"x-amz-request-id", "req-1"}},
      fmt::format("<?xml version=\"1.0\"?><Error><Code>{}</Code><Message>{} message</Message>"
                  "</Error>",
                  code, code),
      1};
}

class FakeTigris {
 public:
  struct Bucket {
    std::string source;    // "" for a plain bucket
    std::string snapshot;  // the fork's snapshot
  };
  struct Key {
    std::string name;
    std::string bucket;
    std::string role;
    std::vector<std::string> more_buckets{};  // further Editor roles
  };
  bool fork_listing_keeps_info = false;  // ignores X-Tigris-Fork, still answers IncludeForkInfo

  std::map<std::string, Bucket> buckets;
  std::map<std::string, Key> keys;                    // id -> key
  std::set<std::string> snapshots;                    // "bucket@version"
  std::map<std::string, std::string> snapshot_names;  // "bucket@version" -> name
  std::string next_version = "1751631910196672425";
  int key_counter = 0;
  bool ignore_fork_header = false;  // an older gateway: lists every bucket, no ForkInfo
  // Return a response to override the normal answer (a failure), or nullopt.
  std::function<std::optional<http::Result>(const ParsedRequest&)> fail_when;

  http::Result handle(const http::Request& request) {
    const auto r = parse_request(request);
    if (fail_when)
      if (auto failure = fail_when(r)) return *failure;
    if (r.method == "POST") return iam(r);
    if (r.method == "PUT") return put(r);
    if (r.method == "HEAD") return head(r);
    if (r.method == "DELETE") return remove(r);
    if (r.method == "GET") return list(r);
    return xml_error(400, "BadRequest");
  }

  // A FakeTransport wired to this fake.
  std::unique_ptr<FakeTransport> transport() {
    return std::make_unique<FakeTransport>(
        [this](const http::Request& request) { return handle(request); });
  }

 private:
  http::Result put(const ParsedRequest& r) {
    if (auto snapshot = r.header("X-Tigris-Snapshot")) {
      if (!buckets.contains(r.bucket)) return xml_error(404, "NoSuchBucket");
      snapshots.insert(r.bucket + "@" + next_version);
      if (const auto at = snapshot->find("; name="); at != std::string::npos)
        snapshot_names[r.bucket + "@" + next_version] = snapshot->substr(at + 7);
      return http::Response{200, {{"X-Tigris-Snapshot-Version", next_version}}, "", 1};
    }
    if (buckets.contains(r.bucket)) return xml_error(409, "BucketAlreadyExists");
    Bucket bucket;
    if (auto source = r.header("X-Tigris-Fork-Source-Bucket")) {
      if (!buckets.contains(*source)) return xml_error(404, "NoSuchBucket");
      bucket.source = *source;
      bucket.snapshot = r.header("X-Tigris-Fork-Source-Bucket-Snapshot").value_or(next_version);
    }
    buckets[r.bucket] = bucket;
    return http::Response{200, {{"Location", "/" + r.bucket}}, "", 1};
  }

  http::Result head(const ParsedRequest& r) {
    auto it = buckets.find(r.bucket);
    if (it == buckets.end()) return http::Response{404, {}, "", 1};
    http::Headers headers{{"X-Tigris-Enable-Snapshot", "true"}};
    if (!it->second.source.empty()) {
      headers.emplace_back("X-Tigris-Fork-Source-Bucket", it->second.source);
      headers.emplace_back("X-Tigris-Fork-Source-Bucket-Snapshot", it->second.snapshot);
    }
    for (const auto& [name, b] : buckets)
      if (b.source == r.bucket) {
        headers.emplace_back("X-Tigris-Is-Fork-Parent", "true");
        break;
      }
    return http::Response{200, headers, "", 1};
  }

  http::Result remove(const ParsedRequest& r) {
    if (auto version = r.header("X-Tigris-Snapshot-Version")) {
      if (snapshots.erase(r.bucket + "@" + *version) == 0) return xml_error(404, "NoSuchSnapshot");
      return http::Response{204, {}, "", 1};
    }
    if (!buckets.contains(r.bucket)) return xml_error(404, "NoSuchBucket");
    for (const auto& [name, b] : buckets)
      if (b.source == r.bucket) return xml_error(409, "BucketHasForks");
    buckets.erase(r.bucket);
    return http::Response{204, {}, "", 1};
  }

  http::Result list(const ParsedRequest& r) {
    if (auto bucket = r.header("X-Tigris-Snapshot")) {
      // ListBucketSnapshots, one page, newest first (tigris-wire.md §2.4).
      if (!buckets.contains(*bucket)) return xml_error(404, "NoSuchBucket");
      std::string body = "<ListAllMyBucketsResult><Buckets>";
      for (auto it = snapshots.rbegin(); it != snapshots.rend(); ++it) {
        if (!it->starts_with(*bucket + "@")) continue;
        const auto version = it->substr(bucket->size() + 1);
        const auto name = snapshot_names.find(*it);
        body += "<Bucket><Name>" + version +
                (name == snapshot_names.end() ? "" : "; name=" + name->second) +
                "</Name><CreationDate>2026-01-01T00:00:00Z</CreationDate></Bucket>";
      }
      body += "</Buckets></ListAllMyBucketsResult>";
      return http::Response{200, {{"Content-Type", "application/xml"}}, body, 1};
    }
    nlohmann::json out;
    out["Buckets"]["Bucket"] = nlohmann::json::array();
    auto fork_of = r.header("X-Tigris-Fork");
    if (ignore_fork_header || fork_listing_keeps_info) fork_of.reset();
    const bool fork_info =
        r.query.contains("IncludeForkInfo") && !(ignore_fork_header && r.header("X-Tigris-Fork"));
    for (const auto& [name, b] : buckets) {
      if (fork_of && b.source != *fork_of) continue;
      nlohmann::json entry{{"Name", name}, {"CreationDate", "2026-01-01T00:00:00Z"}};
      if (!b.source.empty() && fork_info)
        entry["ForkInfo"] = {{"HasChildren", false},
                             {"Parents", {{{"BucketName", b.source}, {"Snapshot", b.snapshot}}}}};
      out["Buckets"]["Bucket"].push_back(entry);
    }
    return http::Response{200, {{"Content-Type", "application/json"}}, out.dump(), 1};
  }

  http::Result iam(const ParsedRequest& r) {
    const auto action = r.query.contains("Action") ? r.query.at("Action") : "";
    if (action == "CreateAccessKeyWithBucketsRole") {
      const auto req = nlohmann::json::parse(r.form.at("Req"));
      const auto id = fmt::format("tid_{:04}", ++key_counter);
      keys[id] = Key{req["name"], req["buckets_role"][0]["bucket"], req["buckets_role"][0]["role"]};
      nlohmann::json body;
      body["CreateAccessKeyResult"]["AccessKey"] = {
          {"AccessKeyId", id}, {"SecretAccessKey", "tsec_secret_" + id}, {"UserName", req["name"]}};
      return http::Response{200, {{"Content-Type", "application/json"}}, body.dump(), 1};
    }
    if (action == "DeleteAccessKey") {
      if (keys.erase(r.form.at("AccessKeyId")) == 0)
        return http::Response{404, {}, R"({"Code":"NoSuchEntity","Message":"no such key"})", 1};
      return http::Response{200, {}, "{}", 1};
    }
    if (r.query.contains("Detailed")) {
      nlohmann::json body{
          {"IsTruncated", false}, {"Marker", ""}, {"Keys", nlohmann::json::array()}};
      for (const auto& [id, key] : keys) {
        auto roles = nlohmann::json::array();
        if (!key.bucket.empty()) roles.push_back({{"bucket", key.bucket}, {"role", key.role}});
        for (const auto& bucket : key.more_buckets)
          roles.push_back({{"bucket", bucket}, {"role", "Editor"}});
        body["Keys"].push_back({{"access_key_id", id},
                                {"username", key.name},
                                {"status", "active"},
                                {"buckets_role", roles}});
      }
      return http::Response{200, {}, body.dump(), 1};
    }
    return http::Response{400, {}, R"({"Code":"InvalidAction"})", 1};
  }
};

inline tigris::Client make_client(http::Transport& transport) {
  return tigris::Client(tigris::ClientSettings{k_endpoint, k_endpoint, "auto", true,
                                               sigv4::Credentials{"AKIDTEST", "secret-test", ""}},
                        transport);
}

}  // namespace tfork::testing
