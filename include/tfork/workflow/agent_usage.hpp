// SPDX-License-Identifier: Apache-2.0
#pragma once
// `fork exec --usage` / `run --usage` (issue 26 §1): what each agent wrote in its fork, read
// from the fork's own listing (ListObjectsV2 on the fork, page by page, every fork at once;
// the source is never listed): the objects whose LastModified is after the fork's snapshot
// (both are the server's clock), and their bytes.

#include "tfork/tigris/client.hpp"
#include "tfork/workflow/agent_runner.hpp"
#include "tfork/workflow/manifest.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tfork::workflow {

// Whether an object listed with `last_modified` was written after `snapshot` (a ns-epoch
// version, tigris-wire §1.4); LastModified has millisecond precision, so the same millisecond
// counts as before. An unreadable time counts as written (it is not the snapshot's).
bool written_after(std::string_view last_modified, std::int64_t snapshot_ns);

// Sets `usage` on every started agent of `outcome`; a failed listing is that agent's
// `usage.error`, never an exception.
void measure_usage(tigris::Client& client, const Manifest& manifest, ExecOutcome& outcome,
                   std::size_t concurrency);

}  // namespace tfork::workflow
