// SPDX-License-Identifier: Apache-2.0
#pragma once
// --debug output of the transport (cli.md §3, §7): request and response lines on the "http"
// logger with every secret redacted. Internal to src/http/.

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <string_view>

namespace tfork::http::debug {

// The "http" logger when the CLI registered one, else spdlog's default logger.
std::shared_ptr<spdlog::logger> logger();

// "GET /b?X-Amz-Signature=abc HTTP/1.1" with signature, token and secret query values masked
// (presigned URLs carry them in the query).
std::string redact_request_line(std::string_view line);

// One "Name: value" header line with its value passed through redact_header_value.
std::string redact_header_line(std::string_view line);

// At most the first 200 bytes of an error body on one line, or a note that it was withheld
// when it mentions a secret or a token anywhere (e.g. an IAM JSON with SecretAccessKey).
std::string loggable_body(std::string_view body);

}  // namespace tfork::http::debug
