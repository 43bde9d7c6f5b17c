// SPDX-License-Identifier: Apache-2.0
// Canonical URI, step 2 of "Create a canonical request" (AWS General Reference, SigV4).

#include "tfork/sigv4/signer.hpp"

#include <vector>

namespace tfork::sigv4 {
namespace {

// RFC 3986 §5.2.4 dot-segment removal plus collapsing of empty segments ("//"), as the
// generic AWS suites' normalize-path cases expect ("//example//" -> "/example/").
std::string normalise_path(std::string_view path) {
  std::vector<std::string_view> segments;
  bool trailing_slash = false;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string_view segment = path.substr(start, end - start);
    const bool last = end == path.size();
    if (segment == "..") {
      if (!segments.empty()) segments.pop_back();
      trailing_slash = last;
    } else if (segment == ".") {
      trailing_slash = last;
    } else if (segment.empty()) {
      trailing_slash = last;
    } else {
      segments.push_back(segment);
      trailing_slash = false;
    }
    start = end + 1;
  }
  std::string out;
  for (const auto segment : segments) {
    out.push_back('/');
    out.append(segment);
  }
  if (out.empty() || trailing_slash) out.push_back('/');
  return out;
}

}  // namespace

std::string canonical_uri(std::string_view wire_path, UriMode mode) {
  if (wire_path.empty()) return "/";
  switch (mode) {
    case UriMode::s3:
      // S3 API Reference: "Do not normalize URI paths" and encode each byte once. The wire
      // path is already encoded, so decode it first; a key "a b" sent as "a%20b" and one
      // sent raw sign the same.
      return uri_encode(uri_decode(wire_path), /*keep_slash=*/true);
    case UriMode::generic:
      // Other services: "Normalize URI paths according to RFC 3986" and encode the wire path
      // as it stands ("each path segment must be URI-encoded twice"): "%20" becomes "%2520".
      return uri_encode(normalise_path(wire_path), /*keep_slash=*/true);
  }
  return "/";
}

}  // namespace tfork::sigv4
