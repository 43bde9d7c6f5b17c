// SPDX-License-Identifier: Apache-2.0
#pragma once
// What happens to a fork after the agents: merge it into its parent, rebase it onto its
// parent's present (tigris-wire.md §2.11), and the bucket-type setting that turns snapshots
// on or off (§2.2).

#include "tfork/tigris/client.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace tfork::tigris {

// PUT /<parent> with X-Tigris-Merge-Source-Bucket: <fork>; answers X-Tigris-Snapshot-Version.
Operation merge_fork(std::string_view fork, std::string_view parent);
// PUT /<fork> with X-Tigris-Rebase: true; answers X-Tigris-Snapshot-Version.
Operation rebase_fork(std::string_view fork);
// PATCH /<bucket> {"type":1} (Snapshot) or {"type":0} (Regular).
Operation set_bucket_type(std::string_view bucket, bool snapshots);

// A settings PATCH answers 200 with {"status":"success"} or {"status":"error","message"}
// (tigris-wire §2.2): the message of an error answer, nullopt on success.
std::optional<std::string> settings_error(const http::Response& response);

}  // namespace tfork::tigris
