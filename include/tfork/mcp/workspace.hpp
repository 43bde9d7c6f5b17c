// SPDX-License-Identifier: Apache-2.0
#pragma once
// What one tool call may reach, and the client it reaches it with (cli.md §13).
//
// * Operator mode (--source S...): the sources and every fork of them, to any depth; a
//   source is read, snapshotted and forked, never written or deleted (only a confirmed
//   fork_merge writes into it). Credentials, endpoint and profile are resolved at each call
//   as the CLI resolves them, so a changed profile needs no restart.
// * Agent mode (--manifest M --fork F): the fork's own bucket with the fork's own key from the
//   manifest (read again at each call, so a revoked key stops the server), and nothing else:
//   the operator's credentials are never looked at, and another bucket is refused before any
//   request is made.

#include "tfork/cli/context.hpp"
#include "tfork/http/transport.hpp"
#include "tfork/mcp/tool.hpp"
#include "tfork/tigris/client.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tfork::mcp {

struct OperatorMode {
  std::vector<std::string> sources;
  std::filesystem::path manifest_dir;  // where fork_create writes its manifests
};
struct AgentMode {
  std::filesystem::path manifest;
  std::string fork;  // a 1-based index or a bucket name, as `fork env` takes it
};

struct ServerConfig {
  std::variant<OperatorMode, AgentMode> mode;
  bool read_only = false;
  std::int64_t max_inline_bytes = 1 << 20;  // object_get's cap on an inline body
  cli::GlobalOptions global;                // as given on the command line
  cli::Environment environment;             // the process's
};

// Where a bucket stands for this server.
enum class Standing { source, fork };

class Workspace {
 public:
  Workspace(const ServerConfig& config, CallContext& call);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  bool agent_mode() const { return std::holds_alternative<AgentMode>(config_.mode); }
  const ServerConfig& config() const { return config_; }
  const std::atomic<bool>& cancelled() const { return call_.cancelled(); }
  std::size_t concurrency() const { return static_cast<std::size_t>(config_.global.concurrency); }

  // Agent mode: the fork's bucket, from the manifest. Operator mode: TforkError(usage).
  const std::string& own_fork();
  // Operator mode's sources.
  const std::vector<std::string>& sources() const;

  // The client of this call, made on first use from the configuration as it is now.
  tigris::Client& client();
  // Each answered request of this call is counted here (fork_create's progress).
  void on_request_done(std::function<void()> counter);

  // Throws unless `bucket` is in reach (see above): TforkError(usage) for a bad name,
  // TforkError(auth, "OutsideScope") for a bucket of no source's family. Agent mode decides
  // from the name alone; operator mode asks HeadBucket along the fork chain when `bucket` is
  // not a source.
  Standing reach(std::string_view bucket);
  // As reach(), and refuses a source: objects are written and deleted in forks only.
  void reach_writable(std::string_view bucket);
  // The bucket `bucket` was forked from, when reach() asked HeadBucket about it.
  std::optional<std::string> parent_of(std::string_view bucket) const;
  // Whether `bucket` is one of the sources (operator mode).
  bool is_source(std::string_view bucket) const;
  // The bucket a tool argument names; in agent mode it may be left out (the fork).
  std::string bucket_argument(const Json& arguments, const char* name);

 private:
  struct AgentKey;
  void load_agent();

  const ServerConfig& config_;
  CallContext& call_;
  std::unique_ptr<AgentKey> agent_;
  std::unique_ptr<http::Transport> transport_;
  std::unique_ptr<tigris::Client> client_;
  std::function<void()> request_done_;
  std::set<std::string, std::less<>> in_reach_;              // forks this call found in reach
  std::map<std::string, std::string, std::less<>> parents_;  // fork -> its source
};

// The TforkError for a bucket outside the server's reach (exit 2).
[[noreturn]] void refuse_outside(std::string_view bucket, std::string why);

}  // namespace tfork::mcp
