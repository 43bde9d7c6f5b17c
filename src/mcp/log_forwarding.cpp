// SPDX-License-Identifier: Apache-2.0
#include "tfork/mcp/log_forwarding.hpp"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <mutex>

namespace tfork::mcp {
namespace {

thread_local CallContext* t_call = nullptr;

LogLevel level_of(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return LogLevel::debug;
    case spdlog::level::info:
      return LogLevel::info;
    case spdlog::level::warn:
      return LogLevel::warning;
    case spdlog::level::err:
      return LogLevel::error;
    default:
      return LogLevel::critical;
  }
}

class CallSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    if (t_call == nullptr) return;
    t_call->log(level_of(message.level),
                std::string(message.payload.data(), message.payload.size()));
  }
  void flush_() override {}
};

}  // namespace

void install_log_forwarding() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto logger = spdlog::default_logger();
    // The stderr sinks keep the level -v/-q chose; the logger itself lets everything through
    // to the call's sink, which the session filters by the level the client set.
    for (auto& sink : logger->sinks())
      sink->set_level(logger->level());
    logger->sinks().push_back(std::make_shared<CallSink>());
    logger->set_level(spdlog::level::debug);
  });
}

ForwardLogsTo::ForwardLogsTo(CallContext& call) : previous_(t_call) {
  t_call = &call;
}

ForwardLogsTo::~ForwardLogsTo() {
  t_call = previous_;
}

}  // namespace tfork::mcp
