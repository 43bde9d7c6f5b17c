// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a log may show of a request target, shared by the client's --debug lines and the
// server's request log: a presigned URL carries its signature and session token in the query
// (X-Amz-Signature, X-Amz-Security-Token), and those must never reach a log.

#include <string>
#include <string_view>

namespace tfork::rules {

// True for a query parameter name that mentions a signature, a token or a secret (any case).
bool names_a_secret(std::string_view name);

// `target` ("/b/k?X-Amz-Signature=abc&x=1") with the value of every query parameter that
// names_a_secret replaced by "***"; the path and the other parameters unchanged.
std::string redact_target(std::string_view target);

}  // namespace tfork::rules
