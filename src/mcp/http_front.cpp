// SPDX-License-Identifier: Apache-2.0
#include "tfork/mcp/http_front.hpp"

#include "tfork/core/ascii.hpp"
#include "tfork/core/error.hpp"
#include "tfork/crypto/hash.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace tfork::mcp {
namespace {

// How long a stream waits at a time before it looks at the stop flag again.
constexpr auto k_wait_slice = std::chrono::milliseconds(200);

bool is_response(const Json& message) {
  return message.is_array() ||
         (message.contains("id") && (message.contains("result") || message.contains("error")));
}

std::string sse_event(const Json& message) {
  // wire_text has no raw newline, so one data line carries the whole message.
  return "event: message\ndata: " + wire_text(message) + "\n\n";
}

// An HTTP-level refusal with a JSON-RPC error that has no id (basic/transports).
HttpReply refusal(int status, std::string message, HeaderList headers = {}) {
  headers.emplace_back("Content-Type", "application/json");
  const Json body{{"jsonrpc", "2.0"},
                  {"error", Json{{"code", k_invalid_request}, {"message", std::move(message)}}}};
  return HttpReply{status, std::move(headers), wire_text(body), nullptr};
}

HttpReply json_reply(const Json& message, HeaderList headers = {}) {
  headers.emplace_back("Content-Type", "application/json");
  return HttpReply{200, std::move(headers), wire_text(message), nullptr};
}

bool same_secret(std::string_view a, std::string_view b) {
  // Constant time in the content: a token is not guessed byte by byte from timings.
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  return difference == 0;
}

// Accept: which of application/json and text/event-stream the client takes (both when it
// sends no Accept or */*).
struct Accepts {
  bool json = true;
  bool events = true;
};
Accepts accepts(const HttpRequest& request) {
  const auto accept = request.header("accept");
  if (!accept || accept->empty()) return {};
  const bool any = ascii::icontains(*accept, "*/*");
  return {any || ascii::icontains(*accept, "application/json"),
          any || ascii::icontains(*accept, "text/event-stream")};
}

// The answer stream of one POSTed request: its notifications and then its response.
class RequestStream final : public Channel, public ReplyStream {
 public:
  explicit RequestStream(const std::atomic<bool>& stop) : stop_(stop) {}

  void send(const Json& message) override {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
      if (is_response(message)) {
        finished_ = true;
        response_ = message;
      }
      events_.push_back(message);
    }
    changed_.notify_all();
  }
  void response_dropped() override {
    {
      std::lock_guard lock(mutex_);
      finished_ = true;
    }
    changed_.notify_all();
  }

  std::optional<std::string> next(std::chrono::milliseconds wait) override {
    std::unique_lock lock(mutex_);
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (events_.empty() && !finished_ && !stop_.load() &&
           std::chrono::steady_clock::now() < deadline)
      changed_.wait_for(lock, k_wait_slice);
    if (!events_.empty()) {
      auto event = sse_event(events_.front());
      events_.pop_front();
      return event;
    }
    if (finished_ || stop_.load()) return std::nullopt;
    return std::string();
  }
  void close() override {
    std::lock_guard lock(mutex_);
    closed_ = true;
    events_.clear();
  }

  // The response alone, when it came at once and nothing came before it.
  std::optional<Json> immediate_response() {
    std::lock_guard lock(mutex_);
    if (finished_ && events_.size() == 1 && is_response(events_.front())) return events_.front();
    return std::nullopt;
  }
  // For a client that takes JSON only: waits for the response (notifications are dropped).
  std::optional<Json> wait_response() {
    std::unique_lock lock(mutex_);
    while (!finished_ && !stop_.load())
      changed_.wait_for(lock, k_wait_slice);
    return response_;
  }

 private:
  const std::atomic<bool>& stop_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Json> events_;
  std::optional<Json> response_;
  bool finished_ = false;
  bool closed_ = false;
};

// The stream of a GET: nothing but keep-alive comments, until the session or the server ends.
class ListenStream final : public ReplyStream {
 public:
  explicit ListenStream(const std::atomic<bool>& stop) : stop_(stop) {}
  std::optional<std::string> next(std::chrono::milliseconds wait) override {
    std::unique_lock lock(mutex_);
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (!ended_ && !stop_.load() && std::chrono::steady_clock::now() < deadline)
      changed_.wait_for(lock, k_wait_slice);
    if (ended_ || stop_.load()) return std::nullopt;
    return std::string();
  }
  void close() override { end(); }
  void end() {
    {
      std::lock_guard lock(mutex_);
      ended_ = true;
    }
    changed_.notify_all();
  }

 private:
  const std::atomic<bool>& stop_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool ended_ = false;
};

class Discard final : public Channel {
 public:
  void send(const Json&) override {}
};

// Whether a POSTed body holds a request (which must be answered) or only notifications and
// responses (202). Unparseable text counts as neither: the session answers it with an error.
bool holds_request(const Json& value) {
  if (value.is_array())
    return std::ranges::any_of(value, [](const Json& element) { return holds_request(element); });
  return value.is_object() && value.contains("method") && value.contains("id");
}

bool is_initialize(const Json& value) {
  return value.is_object() && value.value("method", Json()) == "initialize";
}

}  // namespace

struct HttpFront::Entry {
  std::unique_ptr<Session> session;
  std::mutex receiving;  // Session::receive takes one message at a time
  std::shared_ptr<ListenStream> listener;
  std::chrono::steady_clock::time_point last_used = std::chrono::steady_clock::now();
};

HttpFront::HttpFront(HttpFrontSettings settings,
                     std::function<std::unique_ptr<Session>()> make_session,
                     const std::atomic<bool>& stop)
    : settings_(std::move(settings)), make_session_(std::move(make_session)), stop_(stop) {}

HttpFront::~HttpFront() {
  close_all();
}

void HttpFront::close_all() {
  std::map<std::string, std::shared_ptr<Entry>> sessions;
  {
    std::lock_guard lock(mutex_);
    sessions.swap(sessions_);
  }
  for (auto& [_, entry] : sessions) {
    if (entry->listener) entry->listener->end();
    entry->session->cancel_all();
  }
  for (auto& [_, entry] : sessions)
    entry->session->wait_idle();
}

// DNS rebinding: a page of another site that resolves its name to 127.0.0.1 reaches us with
// its own Host and Origin; both are checked against this server's own addresses.
HttpReply HttpFront::refuse(const HttpRequest& request) const {
  const auto port = std::to_string(settings_.port);
  if (settings_.loopback) {
    const auto host = request.header("host").value_or("");
    if (host != "127.0.0.1:" + port && host != "localhost:" + port && host != "[::1]:" + port)
      return refusal(403, fmt::format("Host '{}' is not this server (127.0.0.1:{})",
                                      output::printable(host), port));
  }
  if (const auto origin = request.header("origin")) {
    const bool own = *origin == "http://127.0.0.1:" + port ||
                     *origin == "http://localhost:" + port || *origin == "http://[::1]:" + port;
    const bool allowed = own || std::ranges::find(settings_.allowed_origins, *origin) !=
                                    settings_.allowed_origins.end();
    if (!allowed)
      return refusal(403, fmt::format("Origin '{}' is not allowed (--allow-origin adds one)",
                                      output::printable(*origin)));
  }
  const auto authorization = request.header("authorization").value_or("");
  constexpr std::string_view k_bearer = "Bearer ";
  if (!authorization.starts_with(k_bearer) ||
      !same_secret(authorization.substr(k_bearer.size()), settings_.token))
    return refusal(401, "a bearer token is required (the one in the --token-file)",
                   {{"WWW-Authenticate", "Bearer realm=\"tfork mcp\""}});
  if (const auto version = request.header("mcp-protocol-version");
      version && !supported_version(*version))
    return refusal(
        400, fmt::format("unsupported MCP-Protocol-Version '{}'", output::printable(*version)));
  return HttpReply{0, {}, {}, nullptr};
}

HttpReply HttpFront::handle(const HttpRequest& request) {
  if (request.path != "/mcp") return refusal(404, "the MCP endpoint is /mcp");
  if (auto refused = refuse(request); refused.status != 0) return refused;
  if (request.method == "POST") return post(request);
  if (request.method == "GET") return get(request);
  if (request.method == "DELETE") return remove(request);
  return refusal(405, "/mcp takes POST, GET and DELETE", {{"Allow", "GET, POST, DELETE"}});
}

std::shared_ptr<HttpFront::Entry> HttpFront::find(const HttpRequest& request, HttpReply& failure) {
  const auto id = request.header("mcp-session-id");
  if (!id) {
    failure = refusal(400, "Mcp-Session-Id is required (initialize first)");
    return nullptr;
  }
  std::lock_guard lock(mutex_);
  const auto found = sessions_.find(std::string(*id));
  if (found == sessions_.end()) {
    failure = refusal(404, "no such session (it ended, or the server restarted): initialize again");
    return nullptr;
  }
  found->second->last_used = std::chrono::steady_clock::now();
  return found->second;
}

std::shared_ptr<HttpFront::Entry> HttpFront::open_session(HttpReply& failure) {
  std::lock_guard lock(mutex_);
  if (sessions_.size() >= settings_.max_sessions) {
    // The session used longest ago makes room, unless every session is busy.
    auto oldest = sessions_.end();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it)
      if (oldest == sessions_.end() || it->second->last_used < oldest->second->last_used)
        oldest = it;
    if (oldest == sessions_.end()) {
      failure = refusal(503, "too many sessions");
      return nullptr;
    }
    if (oldest->second->listener) oldest->second->listener->end();
    oldest->second->session->cancel_all();
    sessions_.erase(oldest);
  }
  auto entry = std::make_shared<Entry>();
  entry->session = make_session_();
  // basic/transports "Session Management": globally unique, cryptographically secure, visible
  // ASCII.
  sessions_.emplace(crypto::random_hex(16), entry);
  return entry;
}

HttpReply HttpFront::post(const HttpRequest& request) {
  const auto type = request.header("content-type").value_or("");
  if (!ascii::icontains(type, "application/json"))
    return refusal(415, "POST /mcp takes Content-Type: application/json");
  const auto accepted = accepts(request);
  if (!accepted.json && !accepted.events)
    return refusal(406, "Accept must include application/json or text/event-stream");
  auto parsed = parse(request.body);
  if (const auto* invalid = std::get_if<Invalid>(&parsed)) return refusal(400, invalid->message);
  const auto& value = std::get<Json>(parsed);

  HttpReply failure;
  std::shared_ptr<Entry> entry;
  std::string new_id;
  if (is_initialize(value)) {
    if (request.header("mcp-session-id"))
      return refusal(400, "initialize starts a new session: send it without Mcp-Session-Id");
    entry = open_session(failure);
    if (!entry) return failure;
    std::lock_guard lock(mutex_);
    for (const auto& [id, candidate] : sessions_)
      if (candidate == entry) new_id = id;
  } else {
    entry = find(request, failure);
    if (!entry) return failure;
  }

  if (!holds_request(value)) {
    {
      std::lock_guard lock(entry->receiving);
      entry->session->receive(request.body, std::make_shared<Discard>());
    }
    return HttpReply{202, {}, {}, nullptr};
  }
  auto stream = std::make_shared<RequestStream>(stop_);
  {
    std::lock_guard lock(entry->receiving);
    entry->session->receive(request.body, stream);
  }
  HeaderList headers;
  if (!new_id.empty()) headers.emplace_back("Mcp-Session-Id", new_id);
  if (auto response = stream->immediate_response())
    return json_reply(*response, std::move(headers));
  if (!accepted.events) {
    auto response = stream->wait_response();
    if (!response) return HttpReply{202, std::move(headers), {}, nullptr};  // cancelled
    return json_reply(*response, std::move(headers));
  }
  headers.emplace_back("Content-Type", "text/event-stream");
  headers.emplace_back("Cache-Control", "no-cache");
  return HttpReply{200, std::move(headers), {}, std::move(stream)};
}

HttpReply HttpFront::get(const HttpRequest& request) {
  if (!accepts(request).events) return refusal(406, "GET /mcp needs Accept: text/event-stream");
  HttpReply failure;
  auto entry = find(request, failure);
  if (!entry) return failure;
  auto listener = std::make_shared<ListenStream>(stop_);
  {
    std::lock_guard lock(mutex_);
    // One listening stream per session: a new GET replaces the old one.
    if (entry->listener) entry->listener->end();
    entry->listener = listener;
  }
  return HttpReply{200,
                   {{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}},
                   {},
                   std::move(listener)};
}

HttpReply HttpFront::remove(const HttpRequest& request) {
  HttpReply failure;
  auto entry = find(request, failure);
  if (!entry) return failure;
  {
    std::lock_guard lock(mutex_);
    std::erase_if(sessions_, [&](const auto& item) { return item.second == entry; });
  }
  if (entry->listener) entry->listener->end();
  entry->session->cancel_all();
  return HttpReply{200, {}, {}, nullptr};
}

std::string load_or_create_token(const std::string& path, bool& created) {
  created = false;
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0) {
    if (!S_ISREG(info.st_mode)) usage_error("--token-file " + path + " is not a regular file");
    if ((info.st_mode & 077) != 0)
      usage_error(fmt::format("--token-file {} may be read by others (mode {:03o}): chmod 600 it",
                              path, info.st_mode & 0777));
    std::ifstream in(path);
    std::string token;
    std::getline(in, token);
    token = std::string(ascii::trim(token));
    if (token.empty()) usage_error("--token-file " + path + " is empty");
    return token;
  }
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    std::error_code ignored;
    std::filesystem::create_directories(parent, ignored);
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    throw TforkError(ErrorKind::other, "TokenFileFailed",
                     "cannot create --token-file " + path + ": " + std::strerror(errno));
  const auto token = crypto::random_hex(32);
  const auto line = token + "\n";
  const bool written = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(fd);
  if (!written)
    throw TforkError(ErrorKind::other, "TokenFileFailed", "cannot write --token-file " + path);
  created = true;
  return token;
}

}  // namespace tfork::mcp
