// SPDX-License-Identifier: Apache-2.0
#pragma once
// Parsing of the raw request target into bucket, key and query (server-design.md §5.2):
// keys come from the raw target, never from a pre-decoded path, so "%2F" and "+" keep their
// meaning. The wire path and query are kept for SigV4 verification.

#include <expected>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfork::server {

struct Target {
  std::string wire_path;   // as sent, e.g. "/b/a%20b"
  std::string wire_query;  // as sent, without '?'
  std::string bucket;      // decoded; empty for "/"
  std::string key;         // decoded; empty when the target names a bucket or the service
  bool has_key = false;    // "/b/" is a bucket target; "/b/k" and "/b//" name keys
  // Decoded, in wire order; a '+' is a plus (as SigV4 reads it) until the signature shows
  // it was a space (Handler::admit then decodes again).
  std::vector<std::pair<std::string, std::string>> query;

  bool has(std::string_view name) const;
  const std::string* get(std::string_view name) const;
};

// Percent-decoding; with form_plus '+' also means a space, as in HTML forms and AWS query
// APIs. nullopt-like failure: the error is a one-line reason.
std::expected<std::string, std::string> percent_decode(std::string_view text, bool form_plus);

// "a=1&b&c=%20" -> {("a","1"),("b",""),("c"," ")}. A '+' is a space when `plus_is_space`
// (form bodies, and a query whose signature was computed so), else a plus.
std::expected<std::vector<std::pair<std::string, std::string>>, std::string> parse_query(
    std::string_view text, bool plus_is_space = true);

std::expected<Target, std::string> parse_target(std::string_view raw_target);

}  // namespace tfork::server
