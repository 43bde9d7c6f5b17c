// SPDX-License-Identifier: Apache-2.0
#pragma once
// The request body after authentication: aws-chunked de-framing with chunk and trailer
// signatures (AWS sigv4-streaming), the x-amz-content-sha256 check, and the integrity
// headers and trailers (Content-MD5, x-amz-checksum-*) of server-design.md §5.1, §5.4, §6.6.

#include "tfork/server/auth.hpp"
#include "tfork/server/body.hpp"
#include "tfork/server/errors.hpp"
#include "tfork/server/http_types.hpp"
#include "tfork/store/store.hpp"

#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::server {

// Removes aws-chunked framing: "<hex size>[;chunk-signature=<sig>]\r\n<data>\r\n" ... a
// zero-size chunk, then optional trailer lines and a blank line. With `signing`, every chunk
// signature (and x-amz-trailer-signature, if present) must verify.
std::expected<DecodedBody, S3Error> decode_aws_chunked(std::string_view body,
                                                       const ChunkSigning* signing);

// How to receive the body of an authenticated request: de-framed and hash-checked per the
// payload mode; x-amz-decoded-content-length is enforced for aws-chunked bodies. `to_file`
// streams it into `tmp_dir` (object bodies), else it is kept in memory up to 1 MiB.
BodyPlan plan_body(const Request& request, const Authenticated& auth, bool to_file,
                   const std::filesystem::path& tmp_dir);

// Checks Content-MD5 and every x-amz-checksum-<algorithm> header or trailer against the body
// (its data, or the digests computed while it streamed to a file).
// Returns the verified checksums as (algorithm, base64) pairs, e.g. {"crc32","gtnkmQ=="}, to
// store with the object and echo back.
std::expected<store::Metadata, S3Error> verify_integrity(const Request& request,
                                                         const DecodedBody& body);

// The x-amz-checksum-<algorithm> value of `data` (base64 of the big-endian CRC, or of the
// digest); empty for an unknown algorithm. Algorithms: crc32 crc32c crc64nvme sha1 sha256.
std::string checksum_of(std::string_view algorithm, std::string_view data);

}  // namespace tfork::server
