#pragma once
// tfork fork create | env | head | ls (cli.md §2, §4, §6; tigris-wire.md §2.7, §2.8c). The
// create workflow lives in tfork/workflow; `fork head` and `fork ls` are here.

#include "tfork/cli/command.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/tigris/client.hpp"

#include <string>
#include <vector>

namespace tfork::commands {

// The `fork` group and its subcommands.
void register_fork(CLI::App& root, cli::Context& context);

namespace fork {

// `fork head` and `fork ls` under the `fork` group (fork_inspect.cpp), for register_fork.
void add_fork_head(CLI::App& fork, cli::Context& context);
void add_fork_ls(CLI::App& fork, cli::Context& context);

struct HeadRow {
  std::string bucket;
  bool exists = false;
  tigris::BucketHead head;  // all defaults when the bucket does not exist
};

struct HeadResult {
  std::vector<HeadRow> buckets;
};

// One HeadBucket per bucket, in parallel; a 404 is a row with exists:false. Any other
// failure throws (the first in input order).
HeadResult run_fork_head(tigris::Client& client, const std::vector<std::string>& buckets,
                         std::size_t concurrency);
output::Json to_json(const HeadResult& result);
std::string to_table(const HeadResult& result);
// Exit 3 when any bucket does not exist (after printing every row).
std::optional<Error> missing_error(const HeadResult& result);

struct ListResult {
  std::string source;
  std::vector<tigris::FoundFork> forks;  // sorted by bucket name
};

ListResult run_fork_ls(tigris::Client& client, const std::string& source);
output::Json to_json(const ListResult& result);
std::string to_table(const ListResult& result);

}  // namespace fork
}  // namespace tfork::commands
