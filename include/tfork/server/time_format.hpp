// SPDX-License-Identifier: Apache-2.0
#pragma once
// Timestamps in the shapes S3 and Tigris put on the wire. Store sequence numbers are Unix
// nanoseconds (server-design.md §6.2), so every formatter takes one.

#include "tfork/store/store.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace tfork::server {

std::string iso8601_ms(store::Seq ns);    // "2009-10-12T17:50:30.000Z" (S3 XML LastModified)
std::string rfc3339_nano(store::Seq ns);  // "2025-07-04T12:25:10.19667705Z" (trailing 0s cut)
std::string http_date(store::Seq ns);     // "Mon, 12 Oct 2009 17:50:30 GMT" (Last-Modified)
// Parses an RFC 1123 HTTP date ("Date" and If-Modified-Since headers).
std::optional<std::chrono::system_clock::time_point> parse_http_date(std::string_view text);
// Parses a SigV4 x-amz-date ("20150830T123600Z").
std::optional<std::chrono::system_clock::time_point> parse_amz_date(std::string_view text);
store::Seq to_seq(std::chrono::system_clock::time_point time);

}  // namespace tfork::server
