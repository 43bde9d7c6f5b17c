// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Streamable HTTP transport of MCP (2025-11-25 basic/transports "Streamable HTTP"), as a
// function from a request to a reply; the listener (tfork/mcp/http_listener.hpp) only moves
// bytes. One endpoint, /mcp:
// * POST carries one message (or a 2025-03-26 batch). A request is answered as
//   application/json when its answer is ready at once, else as an SSE stream carrying its
//   progress and log notifications, then its response. Notifications and responses: 202.
// * GET opens the session's stream for messages not tied to a request (SSE comments only:
//   this server sends none), DELETE ends the session.
// * initialize starts a session: its id comes back in Mcp-Session-Id and every later request
//   must carry it (400 without, 404 for an unknown or ended one).
// * Every request needs `Authorization: Bearer <token>` (401 otherwise). A Host that is not this
//   server's loopback address, or an Origin that is not in the allowed list, gets 403 before
//   anything else: that is what stops a web page from reaching the server through DNS
//   rebinding. An unsupported MCP-Protocol-Version gets 400.

#include "tfork/mcp/http_types.hpp"
#include "tfork/mcp/session.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tfork::mcp {

struct HttpFrontSettings {
  std::string token;                         // the bearer token
  int port = 0;                              // the bound port (for Host and Origin checks)
  bool loopback = true;                      // bound to a loopback address
  std::vector<std::string> allowed_origins;  // beyond http://127.0.0.1:PORT, localhost, [::1]
  std::size_t max_sessions = 64;
};

class HttpFront {
 public:
  HttpFront(HttpFrontSettings settings, std::function<std::unique_ptr<Session>()> make_session,
            const std::atomic<bool>& stop);
  ~HttpFront();

  HttpReply handle(const HttpRequest& request);
  // Ends every session: their calls are cancelled and waited for.
  void close_all();

 private:
  struct Entry;
  HttpReply refuse(const HttpRequest& request) const;
  HttpReply post(const HttpRequest& request);
  HttpReply get(const HttpRequest& request);
  HttpReply remove(const HttpRequest& request);
  std::shared_ptr<Entry> find(const HttpRequest& request, HttpReply& failure);
  std::shared_ptr<Entry> open_session(HttpReply& failure);

  HttpFrontSettings settings_;
  std::function<std::unique_ptr<Session>()> make_session_;
  const std::atomic<bool>& stop_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Entry>> sessions_;
};

// The token of --token-file: read from `path`, or made (32 random bytes as hex) and written
// there with mode 0600 when the file does not exist. A token file others may read is refused
// (TforkError usage), as ssh refuses such a key.
std::string load_or_create_token(const std::string& path, bool& created);

}  // namespace tfork::mcp
