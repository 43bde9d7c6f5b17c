// SPDX-License-Identifier: Apache-2.0
#pragma once
// Pieces of the object operations that tests check on their own: Range parsing (S3 rules,
// not cpp-httplib's), user metadata, and mapping a byte range onto an object's blob files.

#include "tfork/server/http_types.hpp"
#include "tfork/store/store.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::server {

struct ByteRange {
  std::int64_t start = 0;
  std::int64_t length = 0;
  bool unsatisfiable = false;  // 416 InvalidRange
};

// nullopt: no usable single range (several ranges or bad syntax): send the whole object.
std::optional<ByteRange> parse_range(std::string_view header, std::int64_t size);

// Stored standard headers (Cache-Control, Content-Disposition, Content-Encoding without
// aws-chunked, Content-Language, Expires) travel in the user metadata under this mark, which
// no x-amz-meta-* name can start with (':' is not a header-name character).
inline constexpr std::string_view k_stored_header_mark = ":";
// Throws 400 InvalidArgument for a header value that is not UTF-8.
store::Metadata user_metadata(const Request& request);  // x-amz-meta-* (names lowercased)
std::string content_type_of(const Request& request);    // default binary/octet-stream
// Well-formed UTF-8: no overlong forms, surrogates or values past U+10FFFF.
bool valid_utf8(std::string_view text);

// The segments of bytes [start, start+length) of an object. `files`, when given, holds each
// part's open file (null for a part whose bytes came with it), in the order of info.parts.
std::vector<BodySegment> segments_for(
    const store::Store& store, const store::ObjectInfo& info, std::int64_t start,
    std::int64_t length, const std::vector<std::shared_ptr<const OpenFile>>& files = {});

}  // namespace tfork::server
