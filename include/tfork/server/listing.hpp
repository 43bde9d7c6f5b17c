// SPDX-License-Identifier: Apache-2.0
#pragma once
// The opaque continuation token of ListObjectsV2 (server-design §6.5):
// base64url(version byte || kind ('k' key | 'p' common prefix) || last emitted value).

#include <optional>
#include <string>
#include <string_view>

namespace tfork::server {

struct ListToken {
  std::string last;
  bool is_prefix = false;
};

std::string encode_list_token(std::string_view last, bool is_prefix);
std::optional<ListToken> decode_list_token(std::string_view token);  // nullopt: malformed

}  // namespace tfork::server
