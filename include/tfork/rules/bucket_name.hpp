// SPDX-License-Identifier: Apache-2.0
#pragma once
// Bucket name rules (tigris-wire.md §2.1), shared by the client (checked before anything is
// sent) and `tfork serve` (InvalidBucketName), so the two can never disagree.

#include <optional>
#include <string>
#include <string_view>

namespace tfork::rules {

// The reason `name` is not a valid bucket name, or nullopt: 3-63 characters of a-z 0-9 . -,
// starting and ending with a letter or digit, no "..", not shaped like an IPv4 address, no
// "xn--" prefix, no "-s3alias" suffix.
std::optional<std::string> bucket_name_problem(std::string_view name);

}  // namespace tfork::rules
