// SPDX-License-Identifier: Apache-2.0
#include "tfork/iam/access_keys.hpp"

#include "tfork/crypto/hash.hpp"

#include <nlohmann/json.hpp>

namespace tfork::iam {
namespace {

tigris::Operation iam_post(std::string name, std::string_view action, std::string body) {
  tigris::Operation op{.name = std::move(name), .api = tigris::Api::iam, .method = "POST"};
  op.query.emplace_back("Action", std::string(action));
  op.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
  op.headers.emplace_back("Accept", "application/json");
  op.body = std::move(body);
  return op;
}

// A string field of a JSON object; absent, null or any other type reads as "" (a server may
// send null where a string is expected, tigris-wire §3.3: never a crash).
std::string text(const nlohmann::json& object, const char* name) {
  if (!object.is_object()) return {};
  const auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A list field of a JSON object; absent, null or not a list reads as empty.
const nlohmann::json& list(const nlohmann::json& object, const char* name) {
  static const nlohmann::json k_empty = nlohmann::json::array();
  if (!object.is_object()) return k_empty;
  const auto it = object.find(name);
  return it != object.end() && it->is_array() ? *it : k_empty;
}

}  // namespace

std::string_view role_name(Role role) {
  return role == Role::editor ? "Editor" : "ReadOnly";
}

std::string form_encode(const std::vector<std::pair<std::string, std::string>>& fields) {
  auto encode = [](std::string_view text) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : text) {
      if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '*') {
        out += static_cast<char>(c);
      } else if (c == ' ') {
        out += '+';
      } else {
        out += '%';
        out += hex[c >> 4];
        out += hex[c & 15];
      }
    }
    return out;
  };
  std::string body;
  for (const auto& [name, value] : fields) {
    if (!body.empty()) body += '&';
    body += encode(name) + "=" + encode(value);
  }
  return body;
}

std::string new_uuid() {
  auto hex = crypto::random_hex(16);
  hex[12] = '4';                                                    // version 4
  hex[16] = "89ab"[std::stoi(hex.substr(16, 1), nullptr, 16) & 3];  // RFC 4122 variant
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" +
         hex.substr(16, 4) + "-" + hex.substr(20);
}

tigris::Operation create_access_key(std::string_view name, std::string_view bucket, Role role,
                                    std::string_view request_id) {
  nlohmann::ordered_json req;
  req["req_uuid"] = request_id;
  req["name"] = name;
  req["buckets_role"] =
      nlohmann::ordered_json::array({{{"bucket", bucket}, {"role", role_name(role)}}});
  return iam_post("CreateAccessKeyWithBucketsRole", "CreateAccessKeyWithBucketsRole",
                  form_encode({{"Req", req.dump()}}));
}

tigris::Operation delete_access_key(std::string_view access_key_id) {
  return iam_post("DeleteAccessKey", "DeleteAccessKey",
                  form_encode({{"Action", "DeleteAccessKey"},
                               {"Version", "2010-05-08"},
                               {"AccessKeyId", std::string(access_key_id)}}));
}

tigris::Operation list_access_keys(std::string_view marker) {
  std::vector<std::pair<std::string, std::string>> fields{{"Action", "ListAccessKeys"},
                                                          {"MaxItems", "1000"}};
  if (!marker.empty()) fields.emplace_back("Marker", std::string(marker));
  tigris::Operation op{.name = "ListAccessKeys", .api = tigris::Api::iam, .method = "POST"};
  op.query.emplace_back("Detailed", "");
  op.headers.emplace_back("Content-Type", "application/x-www-form-urlencoded");
  op.headers.emplace_back("Accept", "application/json");
  op.body = form_encode(fields);
  return op;
}

std::vector<KeySummary> list_all_access_keys(tigris::Client& client, std::string marker) {
  std::vector<KeySummary> keys;
  for (;;) {
    const auto& answer =
        tigris::expect_success(client.send(list_access_keys(marker)), "ListAccessKeys");
    auto page = parse_key_list(answer);
    if (!page)
      throw TforkError(ErrorKind::other, "InvalidResponse", "ListAccessKeys: " + page.error());
    for (auto& key : page->keys)
      keys.push_back(std::move(key));
    if (page->marker.empty() || page->marker == marker) return keys;
    marker = std::move(page->marker);
  }
}

std::expected<AccessKey, std::string> parse_created_key(const http::Response& response) {
  const auto doc = nlohmann::json::parse(response.body, nullptr, false);
  const auto pointer = "/CreateAccessKeyResult/AccessKey"_json_pointer;
  if (!doc.is_object() || !doc.contains(pointer))
    return std::unexpected("the CreateAccessKeyWithBucketsRole answer has no AccessKey");
  const auto& key = doc[pointer];
  AccessKey created{text(key, "AccessKeyId"), text(key, "SecretAccessKey"), text(key, "UserName")};
  if (created.id.empty() || created.secret.empty())
    return std::unexpected("the CreateAccessKeyWithBucketsRole answer has no key id or secret");
  return created;
}

std::expected<KeyPage, std::string> parse_key_list(const http::Response& response) {
  const auto doc = nlohmann::json::parse(response.body, nullptr, false);
  if (!doc.is_object()) return std::unexpected("the key list is not a JSON object");
  KeyPage page;
  const auto truncated = doc.find("IsTruncated");
  if (truncated != doc.end() && truncated->is_boolean() && truncated->get<bool>())
    page.marker = text(doc, "Marker");
  for (const auto& key : list(doc, "Keys")) {
    if (!key.is_object()) continue;
    KeySummary summary{text(key, "access_key_id"), text(key, "username"), {}};
    if (summary.id.empty()) continue;  // nothing to act on
    for (const auto& role : list(key, "buckets_role")) {
      auto bucket = text(role, "bucket");
      if (!bucket.empty()) summary.buckets_role.emplace_back(std::move(bucket), text(role, "role"));
    }
    page.keys.push_back(std::move(summary));
  }
  return page;
}

}  // namespace tfork::iam
