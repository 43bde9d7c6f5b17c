// SPDX-License-Identifier: Apache-2.0
#pragma once
// Tigris IAM access keys with per-bucket roles (tigris-wire.md §3): form-encoded POSTs to the
// IAM endpoint with JSON answers.

#include "tfork/tigris/client.hpp"

#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::iam {

enum class Role { editor, read_only };
std::string_view role_name(Role role);  // "Editor", "ReadOnly"

struct AccessKey {
  std::string id;      // tid_…
  std::string secret;  // tsec_…; only ever known at creation
  std::string name;
};

// `request_id` is the req_uuid that lets the service recognise a retried create.
tigris::Operation create_access_key(std::string_view name, std::string_view bucket, Role role,
                                    std::string_view request_id);
tigris::Operation delete_access_key(std::string_view access_key_id);
tigris::Operation list_access_keys(std::string_view marker);

std::expected<AccessKey, std::string> parse_created_key(const http::Response& response);

struct KeySummary {
  std::string id;
  std::string name;
  std::vector<std::pair<std::string, std::string>> buckets_role;  // (bucket, role)
};
struct KeyPage {
  std::vector<KeySummary> keys;
  std::string marker;  // empty on the last page
};
std::expected<KeyPage, std::string> parse_key_list(const http::Response& response);

// Every access key the credentials may list from `marker` on ("" : from the start), page after
// page (a marker that repeats ends the listing). Throws TforkError for a failed request or an
// unreadable page.
std::vector<KeySummary> list_all_access_keys(tigris::Client& client, std::string marker = "");

// A random RFC 4122 version-4 UUID.
std::string new_uuid();

// application/x-www-form-urlencoded as URLSearchParams writes it (space → '+').
std::string form_encode(const std::vector<std::pair<std::string, std::string>>& fields);

}  // namespace tfork::iam
