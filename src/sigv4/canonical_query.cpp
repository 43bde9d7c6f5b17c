// SPDX-License-Identifier: Apache-2.0
// Canonical query string, step 3 of "Create a canonical request" (AWS General Reference,
// SigV4): each name and value URI-encoded, sorted by name then value, "name=value" joined
// by '&'; a parameter without '=' is written "name=" (S3: "?lifecycle" -> "lifecycle=").

#include "tfork/sigv4/signer.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace tfork::sigv4 {

std::string canonical_query(std::string_view wire_query) {
  std::vector<std::pair<std::string, std::string>> parameters;
  std::size_t start = 0;
  while (start <= wire_query.size()) {
    const std::size_t end = std::min(wire_query.find('&', start), wire_query.size());
    const std::string_view parameter = wire_query.substr(start, end - start);
    start = end + 1;
    if (parameter.empty()) continue;  // "a=1&&b=2": nothing was sent between the '&'s
    const std::size_t equals = parameter.find('=');
    const std::string_view name = parameter.substr(0, equals);
    const std::string_view value =
        equals == std::string_view::npos ? std::string_view() : parameter.substr(equals + 1);
    // Decode, then encode once, so "a%2Fb", "a/b" and "a%2fb" all sign as "a%2Fb".
    parameters.emplace_back(uri_encode(uri_decode(name), false),
                            uri_encode(uri_decode(value), false));
  }
  // Byte order of the encoded strings, by name and then by value for repeated names.
  std::sort(parameters.begin(), parameters.end());

  std::string out;
  for (const auto& [name, value] : parameters) {
    if (!out.empty()) out.push_back('&');
    out += name;
    out.push_back('=');
    out += value;
  }
  return out;
}

}  // namespace tfork::sigv4
