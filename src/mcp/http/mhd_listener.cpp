// SPDX-License-Identifier: Apache-2.0
#include "tfork/mcp/http_listener.hpp"

#include <arpa/inet.h>
#include <chrono>
#include <cstring>
#include <microhttpd.h>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <thread>

namespace tfork::mcp {
namespace {

// An idle stream sends a comment this often: a connection the client dropped is noticed.
constexpr auto k_keep_alive = std::chrono::seconds(15);
constexpr auto k_stop_poll = std::chrono::milliseconds(100);
constexpr unsigned k_idle_timeout_seconds = 120;

struct Listener {
  const HttpHandler* handler;
  std::size_t max_body_bytes;
};

// One request as it is read: its head, then its body.
struct Exchange {
  HttpRequest request;
  bool too_large = false;
};

// A streamed body, as libmicrohttpd pulls it.
struct StreamState {
  std::shared_ptr<ReplyStream> stream;
  std::string pending;
  std::size_t offset = 0;
};

MHD_Result collect_header(void* cls, MHD_ValueKind, const char* key, const char* value) {
  auto* request = static_cast<HttpRequest*>(cls);
  std::string name(key);
  for (auto& c : name)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  request->headers.emplace_back(std::move(name), value ? value : "");
  return MHD_YES;
}

ssize_t read_stream(void* cls, std::uint64_t, char* buffer, std::size_t max) {
  auto* state = static_cast<StreamState*>(cls);
  while (state->offset >= state->pending.size()) {
    auto next =
        state->stream->next(std::chrono::duration_cast<std::chrono::milliseconds>(k_keep_alive));
    if (!next) return MHD_CONTENT_READER_END_OF_STREAM;
    state->pending = next->empty() ? std::string(": keep-alive\n\n") : std::move(*next);
    state->offset = 0;
  }
  const auto n = std::min(max, state->pending.size() - state->offset);
  std::memcpy(buffer, state->pending.data() + state->offset, n);
  state->offset += n;
  return static_cast<ssize_t>(n);
}

void free_stream(void* cls) {
  auto* state = static_cast<StreamState*>(cls);
  state->stream->close();
  delete state;
}

MHD_Result send_reply(MHD_Connection* connection, HttpReply reply) {
  MHD_Response* response = nullptr;
  if (reply.stream) {
    auto* state = new StreamState{std::move(reply.stream), {}, 0};
    response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, read_stream, state,
                                                 free_stream);
  } else {
    response = MHD_create_response_from_buffer(reply.body.size(), reply.body.data(),
                                               MHD_RESPMEM_MUST_COPY);
  }
  if (!response) return MHD_NO;
  for (const auto& [name, value] : reply.headers)
    MHD_add_response_header(response, name.c_str(), value.c_str());
  const auto result = MHD_queue_response(connection, static_cast<unsigned>(reply.status), response);
  MHD_destroy_response(response);
  return result;
}

MHD_Result on_request(void* cls, MHD_Connection* connection, const char* url, const char* method,
                      const char*, const char* upload_data, std::size_t* upload_size,
                      void** context) {
  auto* listener = static_cast<Listener*>(cls);
  auto* exchange = static_cast<Exchange*>(*context);
  if (!exchange) {
    exchange = new Exchange;
    exchange->request.method = method;
    exchange->request.path = url;
    MHD_get_connection_values(connection, MHD_HEADER_KIND, collect_header, &exchange->request);
    *context = exchange;
    return MHD_YES;
  }
  if (*upload_size > 0) {
    // Past the limit the rest is read and dropped: memory stays bounded.
    if (exchange->request.body.size() + *upload_size > listener->max_body_bytes) {
      exchange->too_large = true;
      exchange->request.body.clear();
      exchange->request.body.shrink_to_fit();
    } else if (!exchange->too_large) {
      exchange->request.body.append(upload_data, *upload_size);
    }
    *upload_size = 0;
    return MHD_YES;
  }
  if (exchange->too_large) {
    HttpReply reply;
    reply.status = 413;
    reply.headers = {{"Content-Type", "application/json"}};
    reply.body =
        R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"the request body is too large"}})";
    return send_reply(connection, std::move(reply));
  }
  HttpReply reply;
  try {
    reply = (*listener->handler)(exchange->request);
  } catch (const std::exception&) {
    reply = HttpReply{500, {{"Content-Type", "text/plain"}}, "internal error\n", nullptr};
  }
  exchange->request.body.clear();
  return send_reply(connection, std::move(reply));
}

void on_completed(void*, MHD_Connection*, void** context, MHD_RequestTerminationCode) {
  delete static_cast<Exchange*>(*context);
  *context = nullptr;
}

}  // namespace

std::optional<Error> listen_http(const ListenOptions& options, const HttpHandler& handler,
                                 const std::atomic<bool>& stop,
                                 const std::function<void(int port)>& on_ready) {
  sockaddr_storage address{};
  socklen_t length = 0;
  unsigned flags =
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
  if (::inet_pton(AF_INET, options.host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(options.port));
    length = sizeof(sockaddr_in);
  } else if (::inet_pton(AF_INET6, options.host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(options.port));
    length = sizeof(sockaddr_in6);
    flags |= MHD_USE_IPv6;
  } else {
    return Error{ErrorKind::usage,
                 "UsageError",
                 "--listen needs an IP address, got '" + options.host + "'",
                 0,
                 {}};
  }
  const int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      ::listen(fd, 64) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return Error{
        ErrorKind::network,
        "ListenFailed",
        "cannot listen on " + options.host + ":" + std::to_string(options.port) + ": " + why,
        0,
        {}};
  }
  socklen_t bound_length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &bound_length);
  const int port = ntohs(address.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);

  // Before any request can be answered: connections wait in the backlog meanwhile, and the
  // handler may depend on what on_ready sets up.
  on_ready(port);
  Listener listener{&handler, options.max_body_bytes};
  auto* daemon = MHD_start_daemon(
      flags, 0, nullptr, nullptr, on_request, &listener, MHD_OPTION_LISTEN_SOCKET, fd,
      MHD_OPTION_CONNECTION_LIMIT, options.max_connections, MHD_OPTION_CONNECTION_TIMEOUT,
      k_idle_timeout_seconds, MHD_OPTION_NOTIFY_COMPLETED, on_completed, nullptr, MHD_OPTION_END);
  if (!daemon) {
    ::close(fd);
    return Error{ErrorKind::network, "ListenFailed", "libmicrohttpd could not start", 0, {}};
  }
  while (!stop.load())
    std::this_thread::sleep_for(k_stop_poll);
  // Streams see `stop` too (the front ends them), so the connection threads finish.
  MHD_stop_daemon(daemon);
  ::close(fd);
  return std::nullopt;
}

}  // namespace tfork::mcp
