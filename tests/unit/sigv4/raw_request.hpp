// SPDX-License-Identifier: Apache-2.0
#pragma once
// Parser of the raw HTTP/1.1 requests in the AWS test suites (.req, request.txt).

#include "tfork/sigv4/signer.hpp"

#include <string>
#include <string_view>

namespace tfork::sigv4::testing {

struct RawRequest {
  std::string method;
  std::string path;   // as written in the request line, up to '?'
  std::string query;  // after '?', without it
  std::vector<Header> headers;
  std::string body;
};

// "METHOD TARGET HTTP/1.1", header lines (a line starting with whitespace continues the
// previous value, RFC 7230 §3.2.4 obs-fold, and is joined with a space), a blank line, the
// body. The target may contain spaces ("/example space/"), so it is taken as everything
// between the first and the last space of the request line.
RawRequest parse_raw_request(std::string_view text);

// A Request ready to sign: the payload hash is the SHA-256 of the body.
Request to_request(const RawRequest& raw);

}  // namespace tfork::sigv4::testing
