// SPDX-License-Identifier: Apache-2.0
#include "tfork/mcp/workspace.hpp"

#include "tfork/cli/command.hpp"
#include "tfork/cli/config.hpp"
#include "tfork/modules/modules.hpp"
#include "tfork/tigris/buckets.hpp"
#include "tfork/workflow/agent_env.hpp"
#include "tfork/workflow/manifest.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tfork::mcp {
namespace {

// Forks of forks are followed this far up before a bucket counts as outside (a listing loop
// on a misbehaving server must not make a call spin).
constexpr int k_max_fork_depth = 16;

// Counts each answered request for the call's progress, then hands it on unchanged.
class CountingTransport final : public http::Transport {
 public:
  CountingTransport(std::unique_ptr<http::Transport> inner, const std::function<void()>& counter)
      : inner_(std::move(inner)), counter_(counter) {}

  void send_batch(http::Batch& batch, std::size_t max_parallel) override {
    Counting counting(batch, counter_);
    inner_->send_batch(counting, max_parallel);
  }

 private:
  // The batch as it is, but each answer counted before it is passed on.
  class Counting final : public http::Batch {
   public:
    Counting(http::Batch& inner, const std::function<void()>& counter)
        : inner_(inner), counter_(counter) {}
    std::optional<Ready> next() override { return inner_.next(); }
    std::optional<std::chrono::steady_clock::time_point> next_ready_at() const override {
      return inner_.next_ready_at();
    }
    bool exhausted() const override { return inner_.exhausted(); }
    void done(std::size_t id, http::Result result) override {
      if (counter_) counter_();
      inner_.done(id, std::move(result));
    }

   private:
    http::Batch& inner_;
    const std::function<void()>& counter_;
  };

  std::unique_ptr<http::Transport> inner_;
  const std::function<void()>& counter_;
};

std::string list(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names)
    out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

// The fork of agent mode as the manifest records it now, and the environment `fork env` would
// give its agent: the only place its credentials come from.
struct Workspace::AgentKey {
  std::string bucket;
  cli::Environment environment;
};

void refuse_outside(std::string_view bucket, std::string why) {
  throw TforkError(
      ErrorKind::auth, "OutsideScope",
      fmt::format("bucket {} is outside this server's reach: {}", output::printable(bucket), why));
}

Workspace::Workspace(const ServerConfig& config, CallContext& call)
    : config_(config), call_(call) {}
Workspace::~Workspace() = default;

void Workspace::load_agent() {
  if (agent_) return;
  const auto& mode = std::get<AgentMode>(config_.mode);
  const auto manifest = workflow::read_manifest(mode.manifest);
  auto env = workflow::agent_env(manifest, mode.fork);
  auto variables =
      std::make_shared<std::vector<std::pair<std::string, std::string>>>(std::move(env.variables));
  agent_ = std::make_unique<AgentKey>(
      AgentKey{env.bucket, [variables](std::string_view name) -> std::optional<std::string> {
                 for (const auto& [key, value] : *variables)
                   if (key == name && !value.empty()) return value;
                 return std::nullopt;
               }});
}

const std::string& Workspace::own_fork() {
  if (!agent_mode()) usage_error("this tool takes a bucket in operator mode");
  load_agent();
  return agent_->bucket;
}

const std::vector<std::string>& Workspace::sources() const {
  return std::get<OperatorMode>(config_.mode).sources;
}

bool Workspace::is_source(std::string_view bucket) const {
  if (agent_mode()) return false;
  return std::ranges::find(sources(), bucket) != sources().end();
}

void Workspace::on_request_done(std::function<void()> counter) {
  request_done_ = std::move(counter);
}

tigris::Client& Workspace::client() {
  if (client_) return *client_;
  // The CLI's own resolution, run again for this call (cli.md §3, §13).
  cli::Environment environment = config_.environment;
  auto global = config_.global;
  if (agent_mode()) {
    load_agent();
    environment = agent_->environment;
    global.config.profile.clear();  // the fork's key and nothing else
  }
  cli::Context context(environment);
  context.options = global;
  const auto& config = context.config();
  auto credentials = cli::resolve_credentials(context.options.config, environment);
  auto options = cli::transport_options(context.options, config);
  options.cancel = &call_.cancelled();
  transport_ = std::make_unique<CountingTransport>(
      std::unique_ptr<http::Transport>(modules::curl().make_transport(options)), request_done_);
  client_ = std::make_unique<tigris::Client>(
      tigris::ClientSettings{config.endpoint, config.iam_endpoint, config.region, config.path_style,
                             std::move(credentials.credentials)},
      *transport_);
  return *client_;
}

Standing Workspace::reach(std::string_view bucket) {
  cli::require_bucket_name(bucket);
  if (agent_mode()) {
    if (bucket == own_fork()) return Standing::fork;
    refuse_outside(bucket, fmt::format("this server works in fork {} only (agent mode); nothing "
                                       "was sent",
                                       own_fork()));
  }
  if (is_source(bucket)) return Standing::source;
  if (in_reach_.contains(bucket)) return Standing::fork;
  // A fork's source never changes: follow the chain up to a source.
  std::string current(bucket);
  for (int depth = 0; depth < k_max_fork_depth; ++depth) {
    const auto answer = client().send(tigris::head_bucket(current));
    if (auto error = tigris::error_from_result(answer, "HeadBucket")) {
      if (error->kind == ErrorKind::not_found)
        error->message = "bucket " + current + " does not exist";
      throw TforkError(std::move(*error));
    }
    const auto head = tigris::parse_head_bucket(*answer);
    if (!head.fork_source) break;
    if (depth == 0) parents_.emplace(std::string(bucket), *head.fork_source);
    if (is_source(*head.fork_source)) {
      in_reach_.emplace(bucket);
      return Standing::fork;
    }
    current = *head.fork_source;
  }
  refuse_outside(
      bucket, "it is neither a source of this server (" + list(sources()) + ") nor a fork of one");
}

std::optional<std::string> Workspace::parent_of(std::string_view bucket) const {
  const auto found = parents_.find(bucket);
  if (found == parents_.end()) return std::nullopt;
  return found->second;
}

void Workspace::reach_writable(std::string_view bucket) {
  cli::require_bucket_name(bucket);
  if (is_source(bucket))
    refuse_outside(bucket,
                   "it is a source, which only a confirmed fork_merge writes into; "
                   "write to a fork of it");
  reach(bucket);
}

std::string Workspace::bucket_argument(const Json& arguments, const char* name) {
  const auto given = arguments.find(name);
  if (given != arguments.end()) return given->get<std::string>();
  if (agent_mode()) return own_fork();
  usage_error(fmt::format("'{}' is required: name a bucket ({} or one of their forks)", name,
                          list(sources())));
}

}  // namespace tfork::mcp
