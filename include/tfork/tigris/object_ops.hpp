// SPDX-License-Identifier: Apache-2.0
#pragma once
// The object operations an agent reaches through `tfork mcp` (cli.md §13): GetObject (of a
// bounded first range), PutObject, DeleteObject, and presigned URLs computed on the client
// (sigv4::presign) for objects too large to hand over inline. The listing is
// tigris::list_objects_v2 (objects.hpp).

#include "tfork/tigris/client.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tfork::tigris {

// Why `key` is refused as an object key, or nullopt. S3 takes any UTF-8 up to 1024 bytes;
// tfork also refuses what is only ever a mistake or an attack when an agent names a key:
// control characters (a key that forges lines in a log or a terminal), invalid UTF-8, and a
// "." or ".." path segment (a proxy or a tool that maps keys to files resolves "a/../b" to
// another object, or outside the bucket).
std::optional<std::string> object_key_problem(std::string_view key);

// GET /<bucket>/<key>; with `first_bytes` > 0 only the range bytes=0-(first_bytes - 1).
Operation get_object(std::string_view bucket, std::string_view key, std::int64_t first_bytes = 0);
Operation put_object(std::string_view bucket, std::string_view key, std::string body,
                     std::string_view content_type);
Operation delete_object(std::string_view bucket, std::string_view key);
// CopyObject, server-side: PUT /<bucket>/<key> with x-amz-copy-source naming
// /<source_bucket>/<source_key> (the key URL-encoded, its '/' kept), metadata copied. What a
// promotion (`fork merge --prefix`, issue 23 §1) sends for each key the fork wrote.
Operation copy_object(std::string_view bucket, std::string_view key, std::string_view source_bucket,
                      std::string_view source_key);
// The ETag (without quotes) of a CopyObject answer's CopyObjectResult; "" when absent.
std::string parse_copy_etag(const http::Response& response);

// What a GetObject answer says about the whole object: its size (from Content-Range when the
// answer is a range, else the body), type and ETag (without quotes).
struct ObjectRead {
  std::int64_t size = 0;
  std::string content_type;
  std::string etag;
};
ObjectRead parse_object_read(const http::Response& response);

// A URL for `method` (GET or PUT) on bucket/key that anyone holding it may use until
// `expires` after `now`, signed with the client's credentials (X-Amz-Algorithm query
// signing, UNSIGNED-PAYLOAD). Nothing is sent. The URL carries the access key id, never the
// secret.
std::string presigned_url(const Client& client, std::string_view method, std::string_view bucket,
                          std::string_view key, std::chrono::seconds expires,
                          sigv4::Clock::time_point now);

}  // namespace tfork::tigris
