// SPDX-License-Identifier: Apache-2.0
// "Create a canonical request" (AWS General Reference, SigV4, task 1):
// method \n URI \n query \n headers (each ending in \n) \n signed names \n payload hash.

#include "tfork/sigv4/signer.hpp"

namespace tfork::sigv4 {

std::string canonical_request(const Request& request, std::string_view signed_names, UriMode mode) {
  std::string out;
  out += request.method;
  out.push_back('\n');
  out += canonical_uri(request.path, mode);
  out.push_back('\n');
  out += canonical_query(request.query);
  out.push_back('\n');
  out += canonical_headers(request.headers, signed_names);
  out.push_back('\n');
  out += signed_names;
  out.push_back('\n');
  out += request.payload_hash;
  return out;
}

}  // namespace tfork::sigv4
