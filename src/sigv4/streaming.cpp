// SPDX-License-Identifier: Apache-2.0
// Strings to sign of aws-chunked uploads (S3 API Reference, "Signature Calculations for the
// Authorization Header: Transferring Payload in Multiple Chunks" and "... Including Trailing
// Headers"). Each chunk signature chains on the previous one, starting from the seed
// (header) signature.

#include "tfork/sigv4/signer.hpp"

#include <fmt/format.h>

namespace tfork::sigv4 {

std::string chunk_string_to_sign(std::string_view amz_date, std::string_view scope,
                                 std::string_view previous_signature,
                                 std::string_view chunk_sha256_hex) {
  return fmt::format("AWS4-HMAC-SHA256-PAYLOAD\n{}\n{}\n{}\n{}\n{}", amz_date, scope,
                     previous_signature, empty_payload_sha256, chunk_sha256_hex);
}

std::string trailer_string_to_sign(std::string_view amz_date, std::string_view scope,
                                   std::string_view previous_signature,
                                   std::string_view trailer_sha256_hex) {
  return fmt::format("AWS4-HMAC-SHA256-TRAILER\n{}\n{}\n{}\n{}", amz_date, scope,
                     previous_signature, trailer_sha256_hex);
}

}  // namespace tfork::sigv4
