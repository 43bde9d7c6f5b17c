// SPDX-License-Identifier: Apache-2.0
#include "tfork/workflow/send_once.hpp"

#include "tfork/tigris/buckets.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace tfork::workflow {

bool may_have_happened(const http::Result& result) {
  if (!result) {
    using Kind = http::TransportError::Kind;
    const auto kind = result.error().kind;
    return kind == Kind::timeout || kind == Kind::other;
  }
  return result->status == 500 || result->status == 502 || result->status == 504;
}

http::Result send_once(tigris::Client& client, const tigris::Operation& operation,
                       const Landed& landed) {
  auto result = client.send(operation);
  if (!may_have_happened(result)) return result;
  const auto why = result ? fmt::format("HTTP {}", result->status) : result.error().message;
  const auto found = landed();
  if (!found) {
    spdlog::info("{} ended unclearly ({}) and did not happen: sending it again", operation.name,
                 why);
    return client.send(operation);
  }
  spdlog::info("{} ended unclearly ({}) but had happened: not sent again", operation.name, why);
  http::Response answer{200, {}, {}, result ? result->attempts : result.error().attempts};
  if (!found->empty()) answer.headers.emplace_back("X-Tigris-Snapshot-Version", *found);
  return answer;
}

Landed snapshot_named(tigris::Client& client, std::string bucket, std::string name,
                      std::chrono::system_clock::time_point not_before) {
  return [&client, bucket = std::move(bucket), name = std::move(name),
          not_before]() -> std::optional<std::string> {
    // A clock 15 minutes off would have had the request refused (SigV4).
    const auto floor = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           (not_before - std::chrono::minutes(15)).time_since_epoch())
                           .count();
    std::optional<std::string> newest;
    std::int64_t newest_ns = 0;
    for (const auto& snapshot : tigris::list_all_snapshots(client, bucket)) {
      if (snapshot.name != name) continue;
      const auto ns = tigris::version_ns(snapshot.version);
      if (ns && *ns >= floor && *ns > newest_ns) {
        newest_ns = *ns;
        newest = snapshot.version;
      }
    }
    return newest;
  };
}

http::Result send_take_snapshot(tigris::Client& client, std::string_view bucket,
                                const std::optional<std::string>& name) {
  const auto operation = tigris::take_snapshot(bucket, name);
  if (!name) return client.send(operation);
  return send_once(
      client, operation,
      snapshot_named(client, std::string(bucket), *name, std::chrono::system_clock::now()));
}

}  // namespace tfork::workflow
