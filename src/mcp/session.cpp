// SPDX-License-Identifier: Apache-2.0
#include "tfork/mcp/session.hpp"

#include "tfork/core/error.hpp"
#include "tfork/mcp/log_forwarding.hpp"
#include "tfork/mcp/schema.hpp"
#include "tfork/output/render.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>

namespace tfork::mcp {
namespace {

constexpr std::array<std::string_view, 3> k_versions = {"2025-11-25", "2025-06-18", "2025-03-26"};
// 2025-06-18 added structured tool output (outputSchema, structuredContent) and titles;
// 2025-03-26 has neither, and takes JSON-RPC batches (removed in 2025-06-18).
constexpr std::string_view k_batch_version = "2025-03-26";

constexpr auto k_progress_interval = std::chrono::milliseconds(100);
// notifications/message per call and second, at most (server/utilities/logging: "SHOULD rate
// limit"); lines beyond that are counted and said once the second is over.
constexpr int k_log_lines_per_second = 20;

constexpr std::array<std::string_view, 8> k_level_names = {
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"};

std::string id_key(const Json& id) {
  return id.dump();
}

// "error: <message> (<code>[, HTTP n][, request id r]); exit <n>": the line a CLI user reads
// on stderr, and the exit code the command would have ended with.
std::string error_text(const Error& error) {
  std::string detail = error.code;
  if (error.http_status != 0) detail += fmt::format(", HTTP {}", error.http_status);
  if (!error.request_id.empty()) detail += ", request id " + error.request_id;
  return fmt::format("error: {} ({}); exit {}", error.message, detail, exit_code(error.kind));
}

Json error_result(const Error& error, const Json& document = nullptr) {
  Json content = Json::array({Json{{"type", "text"}, {"text", error_text(error)}}});
  if (!document.is_null()) content.push_back(Json{{"type", "text"}, {"text", wire_text(document)}});
  return Json{{"content", std::move(content)}, {"isError", true}};
}

// A channel that gathers the responses of a batch into one array (JSON-RPC 2.0 §6) and lets
// notifications through as they come.
class BatchChannel final : public Channel {
 public:
  BatchChannel(std::shared_ptr<Channel> parent, std::size_t expected)
      : parent_(std::move(parent)), expected_(expected) {}
  void send(const Json& message) override {
    if (!message.contains("id")) {
      parent_->send(message);
      return;
    }
    std::lock_guard lock(mutex_);
    responses_.push_back(message);
    finish_locked();
  }
  void response_dropped() override {
    std::lock_guard lock(mutex_);
    --expected_;
    finish_locked();
  }

 private:
  void finish_locked() {
    if (responses_.size() < expected_) return;
    if (!responses_.empty()) parent_->send(responses_);
    parent_->response_dropped();
    expected_ = static_cast<std::size_t>(-1);  // sent: nothing more
  }
  std::shared_ptr<Channel> parent_;
  std::mutex mutex_;
  std::size_t expected_;
  Json responses_ = Json::array();
};

}  // namespace

std::span<const std::string_view> protocol_versions() {
  return k_versions;
}

bool supported_version(std::string_view version) {
  return std::ranges::find(k_versions, version) != k_versions.end();
}

std::string_view level_name(LogLevel level) {
  return k_level_names[static_cast<std::size_t>(level)];
}

std::optional<LogLevel> parse_level(std::string_view name) {
  const auto found = std::ranges::find(k_level_names, name);
  if (found == k_level_names.end()) return std::nullopt;
  return static_cast<LogLevel>(found - k_level_names.begin());
}

// One tools/call: its cancellation flag, its progress token, and the channel its answer and
// notifications go to.
struct Session::Call {
  Json id;
  const Tool* tool = nullptr;
  Json arguments;
  Json progress_token;  // null: the request did not ask for progress
  std::shared_ptr<Channel> channel;
  std::atomic<bool> cancelled{false};
};

// What a running tool sees of its call.
class Session::CallScope final : public CallContext {
 public:
  CallScope(Session& session, Call& call) : session_(session), call_(call) {}

  const std::atomic<bool>& cancelled() const override { return call_.cancelled; }

  void progress(double done, double total, std::string message) override {
    if (call_.progress_token.is_null() || call_.cancelled.load()) return;
    const auto now = std::chrono::steady_clock::now();
    // Progress must increase with every notification (basic/utilities/progress).
    if (done <= last_progress_) return;
    const bool last = total > 0 && done >= total;
    if (!last && sent_progress_ && now - last_sent_ < k_progress_interval) return;
    Json params{{"progressToken", call_.progress_token}, {"progress", done}};
    if (total > 0) params["total"] = total;
    if (!message.empty()) params["message"] = std::move(message);
    call_.channel->send(notification_message("notifications/progress", std::move(params)));
    last_progress_ = done;
    last_sent_ = now;
    sent_progress_ = true;
  }

  void log(LogLevel level, std::string message) override {
    if (level < session_.level_.load()) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - window_start_ >= std::chrono::seconds(1)) {
      if (dropped_ > 0)
        send_log(LogLevel::notice,
                 fmt::format("{} more log line(s) of this call were not sent", dropped_));
      window_start_ = now;
      lines_in_window_ = 0;
      dropped_ = 0;
    }
    if (++lines_in_window_ > k_log_lines_per_second) {
      ++dropped_;
      return;
    }
    send_log(level, std::move(message));
  }

 private:
  void send_log(LogLevel level, std::string message) {
    call_.channel->send(notification_message(
        "notifications/message",
        Json{{"level", level_name(level)}, {"logger", "tfork"}, {"data", std::move(message)}}));
  }

  Session& session_;
  Call& call_;
  double last_progress_ = 0;
  bool sent_progress_ = false;
  std::chrono::steady_clock::time_point last_sent_{};
  std::chrono::steady_clock::time_point window_start_{};
  int lines_in_window_ = 0;
  int dropped_ = 0;
};

Session::Session(std::vector<Tool> tools, WorkerPool& workers, SessionSettings settings)
    : tools_(std::move(tools)), workers_(workers), settings_(std::move(settings)) {}

Session::~Session() {
  cancel_all();
  wait_idle();
}

bool Session::initialized() const {
  std::lock_guard lock(mutex_);
  return !version_.empty();
}

std::string Session::protocol_version() const {
  std::lock_guard lock(mutex_);
  return version_;
}

void Session::cancel_all() {
  std::lock_guard lock(mutex_);
  for (auto& [_, call] : calls_)
    call->cancelled.store(true);
}

void Session::wait_idle(const std::atomic<bool>* interrupt) {
  std::unique_lock lock(mutex_);
  while (!calls_.empty()) {
    if (interrupt && interrupt->load()) {
      for (auto& [_, call] : calls_)
        call->cancelled.store(true);
      interrupt = nullptr;
    }
    // A signal handler cannot notify a condition variable: look at the flag now and then.
    idle_.wait_for(lock, std::chrono::milliseconds(200));
  }
}

void Session::refuse(std::string message, const std::shared_ptr<Channel>& channel) {
  channel->send(error_message(nullptr, k_parse_error, std::move(message)));
}

void Session::receive(std::string_view text, const std::shared_ptr<Channel>& channel) {
  auto parsed = parse(text);
  if (const auto* invalid = std::get_if<Invalid>(&parsed)) {
    channel->send(error_message(invalid->id, invalid->code, invalid->message));
    return;
  }
  const auto& value = std::get<Json>(parsed);
  if (!value.is_array()) {
    handle(value, channel);
    return;
  }
  if (protocol_version() != k_batch_version) {
    channel->send(error_message(nullptr, k_invalid_request,
                                "JSON-RPC batches are only part of MCP 2025-03-26; send each "
                                "message on its own"));
    return;
  }
  if (value.empty()) {
    channel->send(error_message(nullptr, k_invalid_request, "an empty batch"));
    return;
  }
  // Every element that is a request, or not a valid message, gets one response in the array.
  std::size_t expected = 0;
  for (const auto& element : value) {
    const auto message = classify(element);
    if (std::holds_alternative<Request>(message) || std::holds_alternative<Invalid>(message))
      ++expected;
  }
  if (expected == 0) {
    for (const auto& element : value)
      handle(element, channel);
    return;
  }
  auto batch = std::make_shared<BatchChannel>(channel, expected);
  for (const auto& element : value)
    handle(element, batch);
}

void Session::handle(const Json& value, const std::shared_ptr<Channel>& channel) {
  auto message = classify(value);
  if (auto* request = std::get_if<Request>(&message)) {
    handle_request(*request, channel);
  } else if (auto* notification = std::get_if<Notification>(&message)) {
    handle_notification(*notification);
  } else if (auto* invalid = std::get_if<Invalid>(&message)) {
    channel->send(error_message(invalid->id, invalid->code, invalid->message));
  }
}

void Session::handle_request(const Request& request, const std::shared_ptr<Channel>& channel) {
  const auto& method = request.method;
  auto answer = [&](Json result) { channel->send(result_message(request.id, std::move(result))); };
  auto answer_error = [&](int code, std::string message) {
    channel->send(error_message(request.id, code, std::move(message)));
  };
  if (method == "initialize") {
    if (initialized()) return answer_error(k_invalid_request, "the session is already initialized");
    const auto version = request.params.find("protocolVersion");
    if (version == request.params.end() || !version->is_string())
      return answer_error(k_invalid_params, "initialize needs params.protocolVersion (a string)");
    return answer(initialize(request));
  }
  if (method == "ping") return answer(Json::object());
  // basic/lifecycle: nothing but pings before the initialize request has been answered.
  if (!initialized())
    return answer_error(k_invalid_request,
                        "the session is not initialized: send initialize first (MCP lifecycle)");
  if (method == "tools/list") {
    auto result = list_tools(request);
    if (result.is_null())
      return answer_error(
          k_invalid_params,
          "invalid cursor: pass the nextCursor of the previous tools/list unchanged");
    return answer(std::move(result));
  }
  if (method == "tools/call") return call_tool(request, channel);
  if (method == "logging/setLevel") {
    const auto level = request.params.find("level");
    const auto parsed = level != request.params.end() && level->is_string()
                            ? parse_level(level->get<std::string>())
                            : std::nullopt;
    if (!parsed)
      return answer_error(
          k_invalid_params,
          "logging/setLevel needs params.level: debug, info, notice, warning, error, "
          "critical, alert or emergency");
    level_.store(*parsed);
    return answer(Json::object());
  }
  answer_error(k_method_not_found, "method not found: " + output::printable(method));
}

void Session::handle_notification(const Notification& notification) {
  if (notification.method != "notifications/cancelled") return;  // initialized, ... : nothing to do
  // Invalid or unknown ids are ignored (basic/utilities/cancellation "Error Handling").
  const auto id = notification.params.find("requestId");
  if (id == notification.params.end()) return;
  std::lock_guard lock(mutex_);
  const auto call = calls_.find(id_key(*id));
  if (call == calls_.end()) return;
  call->second->cancelled.store(true);
  if (const auto reason = notification.params.find("reason");
      reason != notification.params.end() && reason->is_string())
    spdlog::info("the client cancelled call {}: {}", id->dump(),
                 output::printable(reason->get<std::string>()));
}

Json Session::initialize(const Request& request) {
  const auto requested = request.params["protocolVersion"].get<std::string>();
  // basic/lifecycle "Version Negotiation": the same version when supported, else our newest.
  const std::string version = supported_version(requested) ? requested : std::string(k_versions[0]);
  {
    std::lock_guard lock(mutex_);
    version_ = version;
  }
  Json server_info{{"name", "tfork"}, {"version", settings_.server_version}};
  if (version != k_batch_version)
    server_info["title"] = "tfork: a fork of a Tigris bucket per agent";
  Json result{
      {"protocolVersion", version},
      {"capabilities", Json{{"tools", Json{{"listChanged", false}}}, {"logging", Json::object()}}},
      {"serverInfo", std::move(server_info)}};
  if (!settings_.instructions.empty()) result["instructions"] = settings_.instructions;
  return result;
}

Json Session::tool_json(const Tool& tool) const {
  const bool structured = protocol_version() != k_batch_version;
  Json json{{"name", tool.name}};
  if (structured) json["title"] = tool.title;
  json["description"] = tool.description;
  json["inputSchema"] = tool.input_schema;
  if (structured) json["outputSchema"] = tool.output_schema;
  json["annotations"] = Json{{"title", tool.title},
                             {"readOnlyHint", tool.hints.read_only},
                             {"destructiveHint", tool.hints.destructive},
                             {"idempotentHint", tool.hints.idempotent},
                             {"openWorldHint", tool.hints.open_world}};
  return json;
}

Json Session::list_tools(const Request& request) {
  // server/utilities/pagination: an opaque cursor; ours is the index of the next tool.
  std::size_t start = 0;
  if (const auto cursor = request.params.find("cursor"); cursor != request.params.end()) {
    if (!cursor->is_string()) return nullptr;
    const auto& text = cursor->get_ref<const std::string&>();
    constexpr std::string_view k_prefix = "tools-from-";
    if (!text.starts_with(k_prefix)) return nullptr;
    const auto digits = std::string_view(text).substr(k_prefix.size());
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), start);
    if (error != std::errc{} || end != digits.data() + digits.size() || start == 0 ||
        start >= tools_.size())
      return nullptr;
  }
  const auto stop = std::min(tools_.size(), start + settings_.tools_page_size);
  Json tools = Json::array();
  for (std::size_t i = start; i < stop; ++i)
    tools.push_back(tool_json(tools_[i]));
  Json result{{"tools", std::move(tools)}};
  if (stop < tools_.size()) result["nextCursor"] = fmt::format("tools-from-{}", stop);
  return result;
}

void Session::call_tool(const Request& request, const std::shared_ptr<Channel>& channel) {
  auto answer_error = [&](int code, std::string message) {
    channel->send(error_message(request.id, code, std::move(message)));
  };
  const auto name = request.params.find("name");
  if (name == request.params.end() || !name->is_string())
    return answer_error(k_invalid_params, "tools/call needs params.name (a string)");
  const auto tool = std::ranges::find(tools_, name->get<std::string>(), &Tool::name);
  // server/tools "Error Handling": an unknown tool is a protocol error. A tool --read-only
  // removed is unknown here too.
  if (tool == tools_.end())
    return answer_error(k_invalid_params,
                        "unknown tool: " + output::printable(name->get<std::string>()));
  Json arguments = Json::object();
  if (const auto given = request.params.find("arguments"); given != request.params.end())
    arguments = *given;
  if (!arguments.is_object())
    return answer_error(k_invalid_params, "params.arguments must be an object");
  if (auto problem = schema_violation(tool->input_schema, arguments))
    return answer_error(k_invalid_params, "invalid arguments for " + tool->name + ": " + *problem);

  auto call = std::make_shared<Call>();
  call->id = request.id;
  call->tool = &*tool;
  call->arguments = std::move(arguments);
  call->channel = channel;
  if (const auto meta = request.params.find("_meta");
      meta != request.params.end() && meta->is_object()) {
    if (const auto token = meta->find("progressToken");
        token != meta->end() && (token->is_string() || token->is_number_integer()))
      call->progress_token = *token;
  }
  {
    std::lock_guard lock(mutex_);
    // basic/index: an id is never reused within a session; two calls in flight with one id
    // could not be told apart by a cancellation.
    if (!calls_.emplace(id_key(request.id), call).second)
      return answer_error(k_invalid_request,
                          "id " + request.id.dump() + " is already in use by a call in flight");
  }
  const auto bytes = call->arguments.dump(-1, ' ', false, Json::error_handler_t::replace).size();
  if (!workers_.submit([this, call] { run_call(call); }, bytes)) {
    {
      std::lock_guard lock(mutex_);
      calls_.erase(id_key(request.id));
    }
    idle_.notify_all();
    answer_error(k_server_busy,
                 "the server is busy: too many calls are waiting; send this one again later");
  }
}

void Session::run_call(const std::shared_ptr<Call>& call) {
  Json response;
  {
    CallScope scope(*this, *call);
    ForwardLogsTo forward(scope);
    try {
      if (call->cancelled.load())
        throw TforkError(ErrorKind::interrupted, "Interrupted", "cancelled");
      const auto document = call->tool->run(call->arguments, scope);
      response = result_message(call->id, call_result(document));
    } catch (const ToolFailure& failure) {
      response = result_message(call->id, error_result(failure.error(), failure.document()));
    } catch (const TforkError& error) {
      response = result_message(call->id, error_result(error.error()));
    } catch (const std::exception& error) {
      response = result_message(
          call->id, error_result(Error{ErrorKind::other, "InternalError", error.what(), 0, {}}));
    }
  }
  // basic/utilities/cancellation: a cancelled request gets no response.
  if (call->cancelled.load()) {
    call->channel->response_dropped();
  } else {
    call->channel->send(response);
  }
  {
    std::lock_guard lock(mutex_);
    calls_.erase(id_key(call->id));
  }
  idle_.notify_all();
}

Json Session::call_result(const Json& document) const {
  // server/tools "Structured Content": the document, and the same serialised as text for
  // clients that read only text (2025-03-26 has nothing else).
  Json result{{"content", Json::array({Json{{"type", "text"}, {"text", wire_text(document)}}})}};
  if (protocol_version() != k_batch_version) result["structuredContent"] = document;
  result["isError"] = false;
  return result;
}

}  // namespace tfork::mcp
