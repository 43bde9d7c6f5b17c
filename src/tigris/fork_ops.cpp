// SPDX-License-Identifier: Apache-2.0
#include "tfork/tigris/fork_ops.hpp"

#include <nlohmann/json.hpp>

namespace tfork::tigris {

Operation merge_fork(std::string_view fork, std::string_view parent) {
  Operation op{
      .name = "MergeFork", .method = "PUT", .bucket = std::string(parent), .path_style = true};
  op.headers.emplace_back("X-Tigris-Merge-Source-Bucket", std::string(fork));
  op.resend_if_unanswered = false;
  return op;
}

Operation rebase_fork(std::string_view fork) {
  Operation op{
      .name = "RebaseFork", .method = "PUT", .bucket = std::string(fork), .path_style = true};
  op.headers.emplace_back("X-Tigris-Rebase", "true");
  op.resend_if_unanswered = false;
  return op;
}

Operation set_bucket_type(std::string_view bucket, bool snapshots) {
  Operation op{.name = "UpdateBucketSettings",
               .method = "PATCH",
               .bucket = std::string(bucket),
               .path_style = true};
  op.headers.emplace_back("Content-Type", "application/json");
  op.headers.emplace_back("Accept", "application/json");
  op.body = snapshots ? R"({"type":1})" : R"({"type":0})";
  return op;
}

std::optional<std::string> settings_error(const http::Response& response) {
  const auto body = nlohmann::json::parse(response.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) return std::nullopt;  // nothing to object to
  const auto status = body.find("status");
  if (status == body.end() || !status->is_string() || *status == "success") return std::nullopt;
  const auto message = body.find("message");
  return message != body.end() && message->is_string() ? message->get<std::string>()
                                                       : "the service refused the setting";
}

}  // namespace tfork::tigris
