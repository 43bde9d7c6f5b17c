// SPDX-License-Identifier: Apache-2.0
// Canonical headers and signed headers, steps 4 and 5 of "Create a canonical request"
// (AWS General Reference, SigV4).

#include "tfork/core/ascii.hpp"
#include "tfork/sigv4/signer.hpp"

#include <algorithm>
#include <vector>

namespace tfork::sigv4 {
namespace {

// "Trimall": drop leading and trailing whitespace and turn each inner run into one space.
// Tabs and folded line breaks count as whitespace too, as in @smithy/signature-v4
// (`value.trim().replace(/\s+/g, " ")`), which is what aws-c-auth's multiline case expects.
std::string trim_all(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  bool pending_space = false;
  for (const char c : value) {
    if (ascii::is_space(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out.push_back(' ');
    pending_space = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::string signed_header_names(const std::vector<Header>& headers) {
  std::vector<std::string> names;
  names.reserve(headers.size());
  for (const auto& header : headers)
    names.push_back(ascii::lower(header.first));
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());

  std::string out;
  for (const auto& name : names) {
    if (!out.empty()) out.push_back(';');
    out += name;
  }
  return out;
}

std::string canonical_headers(const std::vector<Header>& headers, std::string_view signed_names) {
  std::string out;
  std::size_t start = 0;
  while (start < signed_names.size()) {
    const std::size_t end = std::min(signed_names.find(';', start), signed_names.size());
    const std::string_view name = signed_names.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;

    out += name;
    out.push_back(':');
    bool first = true;
    // Repeated headers keep their order of appearance, joined by ',' (get-header-value-order).
    for (const auto& [header_name, value] : headers) {
      if (ascii::lower(header_name) != name) continue;
      if (!first) out.push_back(',');
      first = false;
      out += trim_all(value);
    }
    out.push_back('\n');
  }
  return out;
}

}  // namespace tfork::sigv4
