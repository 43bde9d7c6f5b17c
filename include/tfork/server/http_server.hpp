// SPDX-License-Identifier: Apache-2.0
#pragma once
// The socket layer of `tfork serve` (style.md #8) over GNU libmicrohttpd: event-driven
// (epoll, a small pool of event threads), so an idle or slow connection costs memory and
// never a thread. Each request is admitted from its head (authenticated before any body is
// read, and before 100-continue), its body streamed in bounded memory into the Handler's
// receiver, and object bodies sent from open blob files without copying them into memory.

#include "tfork/server/fault_injection.hpp"
#include "tfork/server/handler.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tfork::server {

struct HttpLimits {
  std::size_t max_head = 64 * 1024;  // request line + headers (431 beyond)
  // Connections open at once. Up to `refusal_reserve` more are accepted only to answer their
  // first request 503 SlowDown and close; beyond that libmicrohttpd closes new connections
  // at accept and then leaves them in the listen backlog until a slot frees.
  // A quarter of them is kept from anonymous connections (none of whose requests has been
  // authenticated) that are awaiting a head: past the rest, the oldest such connection is
  // closed to make room for a new one, so that slow heads cannot keep signed requests out.
  unsigned connection_limit = 4096;
  unsigned refusal_reserve = 64;
  // Anonymous connections awaiting a head from one peer address (0: no limit); past it the
  // peer's oldest is closed, so one peer cannot push out everyone else's. The default is the
  // CLI's largest --concurrency, so the burst of new connections of one tfork never meets it.
  unsigned anonymous_per_peer = 1024;
  unsigned idle_timeout_seconds = 30;  // a connection silent this long is closed
  // A request head must be complete within this many seconds of the connection opening (or
  // of the previous response on it), however steadily it trickles in; else 400
  // RequestTimeout (once its request line has arrived) and the connection is closed.
  unsigned head_timeout_seconds = 30;
  // A request body must have arrived within this many seconds of its head being admitted,
  // plus one second per `body_min_rate` bytes it declares (a 5 GiB upload at a steady 1 MiB/s
  // is never cut off); else 400 RequestTimeout and the connection is closed.
  unsigned body_timeout_seconds = 300;
  std::uint64_t body_min_rate = std::uint64_t{1} << 20;  // bytes per second
  // Bodies read before their signature can be verified (IAM calls that sign their body's hash,
  // 16 KiB at most each) held at once; more are answered 503 SlowDown.
  unsigned unauthenticated_bodies = 64;
  unsigned event_threads = 2;  // epoll loops; reads run inline on them
  // Threads that run requests which may change the store (they mostly wait for its group
  // commit, so as many can wait as there are writes to batch).
  unsigned writer_threads = 32;
};

class HttpServer {
 public:
  HttpServer(Handler& handler, FaultInjector& faults, HttpLimits limits = {});
  ~HttpServer();  // stops
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port (0: any free port) with the system's largest listen backlog and starts
  // serving; returns the port, or an error message.
  std::expected<int, std::string> start(const std::string& host, int port);
  // Stops accepting, lets requests in flight finish for up to `grace`, then closes the rest.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tfork::server
