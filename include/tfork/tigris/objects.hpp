// SPDX-License-Identifier: Apache-2.0
#pragma once
// ListObjectsV2, one page at a time, optionally at a snapshot version (tigris-wire.md §2.9):
// what `fork diff` and `tfork mcp`'s object_list read. Keys are asked for URL-encoded
// (encoding-type=url), so a key with characters XML cannot carry still arrives intact.

#include "tfork/tigris/client.hpp"

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::tigris {

struct ListObjectsRequest {
  std::string bucket;
  std::string prefix;
  std::string continuation_token;  // "" for the first page
  std::string snapshot_version;    // "" for the live bucket
  int max_keys = 1000;
  std::string delimiter;    // "" : no grouping into common prefixes
  std::string start_after;  // "" : from the first key (only without a continuation token)
};
Operation list_objects_v2(const ListObjectsRequest& request);

struct ObjectEntry {
  std::string key;
  std::int64_t size = 0;
  std::string etag;           // without quotes
  std::string last_modified;  // as the server sent it ("" when absent)
};
struct ObjectPage {
  std::vector<ObjectEntry> objects;          // in key order, as the server sent them
  std::vector<std::string> common_prefixes;  // with a delimiter: the groups, in order
  std::string next_token;                    // "" on the last page
};
std::expected<ObjectPage, std::string> parse_object_list(const http::Response& response);

}  // namespace tfork::tigris
