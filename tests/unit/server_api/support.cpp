// SPDX-License-Identifier: Apache-2.0
#include "support.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>

namespace tfork::server::test {

std::string Server::body_of(const Response& response) {
  if (response.blob_body.empty()) return response.body;
  std::string out;
  for (const auto& segment : response.blob_body) {
    if (segment.bytes) {
      out += segment.bytes->substr(static_cast<std::size_t>(segment.offset),
                                   static_cast<std::size_t>(segment.length));
      continue;
    }
    std::ifstream in(segment.path, std::ios::binary);
    in.seekg(segment.offset);
    std::string chunk(static_cast<std::size_t>(segment.length), '\0');
    in.read(chunk.data(), segment.length);
    out += chunk;
  }
  return out;
}

Credentials Server::create_key(const std::string& name, const std::string& roles_json,
                               std::optional<Credentials> as) {
  const nlohmann::json req{{"req_uuid", "00000000-0000-4000-8000-000000000000"},
                           {"name", name},
                           {"buckets_role", nlohmann::json::parse(roles_json)}};
  std::string body = "Req=";
  for (const unsigned char c : req.dump()) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      body.push_back(static_cast<char>(c));
    } else {
      static constexpr char k_hex[] = "0123456789ABCDEF";
      body += '%';
      body += k_hex[c >> 4];
      body += k_hex[c & 15];
    }
  }
  const auto response = send({.method = "POST",
                              .target = "/?Action=CreateAccessKeyWithBucketsRole",
                              .body = body,
                              .headers = {{"Content-Type", "application/x-www-form-urlencoded"},
                                          {"Accept", "application/json"}},
                              .as = as});
  INFO(response.body);
  REQUIRE(response.status == 200);
  const auto json = nlohmann::json::parse(response.body);
  const auto& key = json["CreateAccessKeyResult"]["AccessKey"];
  return {key["AccessKeyId"].get<std::string>(), key["SecretAccessKey"].get<std::string>()};
}

std::string xml_value(const std::string& xml, const std::string& tag) {
  const auto open = "<" + tag + ">";
  const auto start = xml.find(open);
  if (start == std::string::npos) return {};
  const auto end = xml.find("</" + tag + ">", start);
  return xml.substr(start + open.size(), end - start - open.size());
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace tfork::server::test
