// SPDX-License-Identifier: Apache-2.0
#include "tfork/workflow/agent_usage.hpp"

#include "tfork/output/render.hpp"
#include "tfork/tigris/objects.hpp"

#include <charconv>
#include <string>
#include <vector>

namespace tfork::workflow {

bool written_after(std::string_view last_modified, std::int64_t snapshot_ns) {
  const auto modified = output::unix_ns(last_modified);
  if (!modified) return true;
  return *modified / 1'000'000 > snapshot_ns / 1'000'000;
}

void measure_usage(tigris::Client& client, const Manifest& manifest, ExecOutcome& outcome,
                   std::size_t concurrency) {
  std::int64_t snapshot_ns = 0;
  const auto& version = manifest.snapshot;
  std::from_chars(version.data(), version.data() + version.size(), snapshot_ns);
  struct Listing {
    AgentResult* agent;
    std::string token;
  };
  std::vector<Listing> listing;
  for (auto& agent : outcome.agents) {
    if (!agent.started) continue;
    agent.usage = ForkUsage{};
    listing.push_back({&agent, ""});
  }
  // One page of every unfinished listing per round: as many round trips as the longest has
  // pages.
  while (!listing.empty()) {
    std::vector<tigris::Operation> pages;
    for (const auto& item : listing)
      pages.push_back(tigris::list_objects_v2({.bucket = item.agent->bucket,
                                               .prefix = "",
                                               .continuation_token = item.token,
                                               .snapshot_version = "",
                                               .max_keys = 1000,
                                               .delimiter = "",
                                               .start_after = ""}));
    const auto results = client.send_all(pages, concurrency);
    std::vector<Listing> more;
    for (std::size_t i = 0; i < listing.size(); ++i) {
      auto& usage = *listing[i].agent->usage;
      if (const auto error = tigris::error_from_result(results[i], "ListObjectsV2")) {
        usage = ForkUsage{0, 0, error->message};
        continue;
      }
      const auto page = tigris::parse_object_list(*results[i]);
      if (!page) {
        usage = ForkUsage{0, 0, page.error()};
        continue;
      }
      for (const auto& object : page->objects) {
        if (!written_after(object.last_modified, snapshot_ns)) continue;
        ++usage.objects;
        usage.bytes += object.size;
      }
      if (!page->next_token.empty()) more.push_back({listing[i].agent, page->next_token});
    }
    listing = std::move(more);
  }
}

}  // namespace tfork::workflow
