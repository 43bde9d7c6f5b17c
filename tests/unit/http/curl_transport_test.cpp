// SPDX-License-Identifier: Apache-2.0
// The libcurl transport against a local cpp-httplib server (127.0.0.1, port 0). The tests
// assert behaviour (counts, order, kinds, bytes on the wire), never wall-clock speed; the few
// time bounds are generous ceilings that only a hang would break.

#include "tfork/http/transport.hpp"

#include <catch2/catch.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "test_server.hpp"
#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <deque>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <optional>
#include <poll.h>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;
using tfork::http::Options;
using tfork::http::Request;
using tfork::http::Result;
using tfork::http::TransportError;
using tfork::http::testing::TestServer;

namespace {

// Retries without real waiting, and bounded timeouts so a regression fails instead of hanging.
Options fast_options() {
  Options options;
  options.connect_timeout = 5000ms;
  options.read_timeout = 20000ms;
  options.retry.max_attempts = 3;
  options.retry.base_delay = 1ms;
  options.retry.max_delay = 5ms;
  options.user_agent = "tfork/test";
  return options;
}

Request get(const TestServer& server, const std::string& target) {
  return Request{"GET", server.url(target), {}, {}};
}

template <typename Predicate>
bool wait_until(Predicate predicate, std::chrono::milliseconds limit = 20000ms) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!predicate()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// A loopback port on which nothing listens: bound by us, then closed.
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  socklen_t length = sizeof address;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  ::close(fd);
  return ntohs(address.sin_port);
}

const char* const k_slow_down =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>"
    "<Message>Please reduce your request rate.</Message><RequestId>r1</RequestId></Error>";

}  // namespace

TEST_CASE("send_all: 50 requests at max_parallel 8 keep input order and the limit", "[http]") {
  std::mutex mutex;
  std::set<int> client_ports;
  std::atomic<int> in_flight{0};
  std::atomic<int> most_in_flight{0};
  TestServer server([&](const httplib::Request& request, httplib::Response& response) {
    const int now = ++in_flight;
    int seen = most_in_flight.load();
    while (now > seen && !most_in_flight.compare_exchange_weak(seen, now)) {
    }
    {
      const std::lock_guard lock(mutex);
      client_ports.insert(request.remote_port);
    }
    std::this_thread::sleep_for(20ms);
    --in_flight;
    response.set_content(request.get_header_value("x-index"), "text/plain");
  });
  auto transport = tfork::http::make_curl_transport(fast_options());

  std::vector<Request> requests;
  for (int i = 0; i < 50; ++i) {
    Request request = get(server, "/item/" + std::to_string(i));
    request.headers.emplace_back("x-index", std::to_string(i));
    requests.push_back(std::move(request));
  }
  std::vector<std::size_t> done_order;
  const auto results =
      transport->send_all(requests, 8, [&](std::size_t index, const Result& result) {
        REQUIRE(result.has_value());
        CHECK(result->body == std::to_string(index));
        done_order.push_back(index);
      });

  REQUIRE(results.size() == 50);
  for (std::size_t i = 0; i < results.size(); ++i) {
    REQUIRE(results[i].has_value());
    CHECK(results[i]->status == 200);
    CHECK(results[i]->body == std::to_string(i));
    CHECK(results[i]->attempts == 1);
  }
  std::sort(done_order.begin(), done_order.end());
  std::vector<std::size_t> every_index(50);
  for (std::size_t i = 0; i < every_index.size(); ++i)
    every_index[i] = i;
  CHECK(done_order == every_index);  // on_done once per request
  const std::lock_guard lock(mutex);
  CHECK(client_ports.size() <= 8);
  CHECK(most_in_flight.load() <= 8);
  CHECK(most_in_flight.load() > 1);  // and they did run in parallel
}

TEST_CASE("send_all of nothing, and max_parallel 0 meaning 1", "[http]") {
  std::atomic<int> served{0};
  TestServer server([&](const httplib::Request&, httplib::Response&) { ++served; });
  auto transport = tfork::http::make_curl_transport(fast_options());
  CHECK(transport->send_all({}, 8).empty());
  const std::vector<Request> two{get(server, "/a"), get(server, "/b")};
  const auto results = transport->send_all(two, 0);
  REQUIRE(results.size() == 2);
  CHECK(results[0].has_value());
  CHECK(results[1].has_value());
  CHECK(served.load() == 2);
}

TEST_CASE("send reuses the connection across calls", "[http]") {
  std::mutex mutex;
  std::vector<int> client_ports;
  TestServer server([&](const httplib::Request& request, httplib::Response& response) {
    const std::lock_guard lock(mutex);
    client_ports.push_back(request.remote_port);
    response.set_content("ok", "text/plain");
  });
  auto transport = tfork::http::make_curl_transport(fast_options());
  REQUIRE(transport->send(get(server, "/one")).has_value());
  REQUIRE(transport->send(get(server, "/two")).has_value());
  const auto batch = std::vector<Request>{get(server, "/three")};
  REQUIRE(transport->send_all(batch, 4).front().has_value());
  const std::lock_guard lock(mutex);
  REQUIRE(client_ports.size() == 3);
  CHECK(client_ports[0] == client_ports[1]);
  CHECK(client_ports[1] == client_ports[2]);
}

TEST_CASE("retries follow cli.md section 7", "[http]") {
  std::mutex mutex;
  std::map<std::string, int> hits;
  TestServer server([&](const httplib::Request& request, httplib::Response& response) {
    int hit = 0;
    {
      const std::lock_guard lock(mutex);
      hit = ++hits[request.path];
    }
    const std::string& path = request.path;
    if (path == "/slowdown-twice") {
      response.status = hit <= 2 ? 503 : 200;
      response.set_content(hit <= 2 ? k_slow_down : "done", "application/xml");
    } else if (path == "/429-once") {
      response.status = hit == 1 ? 429 : 200;
    } else if (path == "/400-slowdown-once") {
      response.status = hit == 1 ? 400 : 200;
      response.set_content(hit == 1 ? k_slow_down : "done", "application/xml");
    } else if (path == "/200-slowdown") {
      response.set_content(k_slow_down, "application/xml");
    } else if (path == "/500") {
      response.status = 500;
    } else if (path == "/502-once" || path == "/504-once") {
      response.status = hit == 1 ? (path == "/502-once" ? 502 : 504) : 200;
    } else if (path == "/408-once") {
      response.status = hit == 1 ? 408 : 200;
    } else if (path == "/retry-after-once") {
      response.status = hit == 1 ? 503 : 200;
      if (hit == 1) response.set_header("Retry-After", "1");
    } else {
      response.status = std::stoi(path.substr(1));  // "/404", "/403", "/409"
      response.set_content("<Error><Code>Nope</Code></Error>", "application/xml");
    }
  });
  Options options = fast_options();
  options.retry.max_attempts = 4;
  auto transport = tfork::http::make_curl_transport(options);
  auto hits_of = [&](const std::string& path) {
    const std::lock_guard lock(mutex);
    return hits[path];
  };

  SECTION("503 SlowDown twice, then 200: success on the third send") {
    const auto result = transport->send(get(server, "/slowdown-twice"));
    REQUIRE(result.has_value());
    CHECK(result->status == 200);
    CHECK(result->body == "done");
    CHECK(result->attempts == 3);
    CHECK(hits_of("/slowdown-twice") == 3);
  }
  SECTION("429, 502 and 504 are retried") {
    for (const std::string path : {"/429-once", "/502-once", "/504-once"}) {
      const auto result = transport->send(get(server, path));
      REQUIRE(result.has_value());
      CHECK(result->status == 200);
      CHECK(result->attempts == 2);
    }
  }
  SECTION("408 is retried") {
    const auto result = transport->send(get(server, "/408-once"));
    REQUIRE(result.has_value());
    CHECK(result->status == 200);
    CHECK(result->attempts == 2);
  }
  SECTION("Retry-After is a floor under the backoff") {
    auto patient = options;
    patient.retry.max_delay = 5000ms;  // the cap Retry-After is held to
    auto waiting = tfork::http::make_curl_transport(patient);
    const auto started = std::chrono::steady_clock::now();
    const auto result = waiting->send(get(server, "/retry-after-once"));
    REQUIRE(result.has_value());
    CHECK(result->attempts == 2);
    // fast_options' backoff alone is a few ms; the server asked for a second.
    CHECK(std::chrono::steady_clock::now() - started >= std::chrono::milliseconds(1000));
  }
  SECTION("what must not happen twice: a 500 or 502 is final, throttling and 408 are retried") {
    for (const std::string path : {"/500", "/502-once"}) {
      auto request = get(server, path);
      request.resend_if_unanswered = false;
      const auto before = hits_of(path);
      const auto result = transport->send(request);
      REQUIRE(result.has_value());
      CHECK(result->status / 100 == 5);
      CHECK(result->attempts == 1);
      CHECK(hits_of(path) == before + 1);
    }
    for (const std::string path : {"/429-once", "/408-once", "/slowdown-twice"}) {
      auto request = get(server, path);
      request.resend_if_unanswered = false;
      const auto result = transport->send(request);
      REQUIRE(result.has_value());
      CHECK(result->status == 200);
      CHECK(result->attempts > 1);
    }
  }
  SECTION("a non-2xx SlowDown error body is retried whatever its status") {
    const auto result = transport->send(get(server, "/400-slowdown-once"));
    REQUIRE(result.has_value());
    CHECK(result->status == 200);
    CHECK(result->attempts == 2);
  }
  SECTION("a 2xx body that mentions SlowDown is a payload, not throttling") {
    const auto result = transport->send(get(server, "/200-slowdown"));
    REQUIRE(result.has_value());
    CHECK(result->status == 200);
    CHECK(result->attempts == 1);
  }
  SECTION("other 4xx are never retried") {
    for (const std::string path : {"/404", "/403", "/409"}) {
      const auto result = transport->send(get(server, path));
      REQUIRE(result.has_value());
      CHECK(result->status == std::stoi(path.substr(1)));
      CHECK(result->attempts == 1);
      CHECK(hits_of(path) == 1);
    }
  }
  SECTION("max_attempts bounds the sends; the last response is the result") {
    const auto result = transport->send(get(server, "/500"));
    REQUIRE(result.has_value());
    CHECK(result->status == 500);
    CHECK(result->attempts == 4);
    CHECK(hits_of("/500") == 4);
  }
}

TEST_CASE("a request waiting for its backoff does not hold up the others", "[http]") {
  // /flaky answers 503 until every other request has been served. With one slot, it can
  // only succeed if the others run while it waits for its retry.
  std::atomic<int> others_served{0};
  std::atomic<int> flaky_sends{0};
  TestServer server([&](const httplib::Request& request, httplib::Response& response) {
    if (request.path == "/flaky") {
      ++flaky_sends;
      response.status = others_served.load() == 4 ? 200 : 503;
      return;
    }
    ++others_served;
  });
  Options options = fast_options();
  options.retry.max_attempts = 30;
  options.retry.base_delay = 2ms;
  options.retry.max_delay = 20ms;
  auto transport = tfork::http::make_curl_transport(options);
  std::vector<Request> requests{get(server, "/flaky"), get(server, "/a"), get(server, "/b"),
                                get(server, "/c"), get(server, "/d")};
  std::vector<std::size_t> done_order;
  const auto results = transport->send_all(
      requests, 1, [&](std::size_t index, const Result&) { done_order.push_back(index); });
  REQUIRE(results[0].has_value());
  CHECK(results[0]->status == 200);
  CHECK(results[0]->attempts == flaky_sends.load());
  CHECK(results[0]->attempts >= 2);
  REQUIRE(done_order.size() == 5);
  CHECK(done_order.back() == 0);
}

TEST_CASE("nothing listening: Kind::connect, retried, naming host:port", "[http]") {
  const int port = closed_port();
  Options options = fast_options();
  options.retry.max_attempts = 2;
  auto transport = tfork::http::make_curl_transport(options);
  const auto result =
      transport->send(Request{"GET", "http://127.0.0.1:" + std::to_string(port) + "/x", {}, {}});
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().kind == TransportError::Kind::connect);
  CHECK(result.error().attempts == 2);
  CHECK_THAT(result.error().message,
             Catch::Contains("connect to 127.0.0.1:" + std::to_string(port) + " failed"));
  CHECK(result.error().message.find('\n') == std::string::npos);
}

TEST_CASE("a connect that gets no answer ends at the connect timeout", "[http]") {
  // A listening socket whose accept queue is full drops further SYNs (Linux), so a connect
  // hangs without any network beyond loopback.
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(listener >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  socklen_t length = sizeof address;
  REQUIRE(::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  REQUIRE(::listen(listener, 0) == 0);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    const int filler = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(filler >= 0);
    ::fcntl(filler, F_SETFL, O_NONBLOCK);
    (void)::connect(filler, reinterpret_cast<sockaddr*>(&address), sizeof address);
    fillers.push_back(filler);
  }
  // The queue is full once the one handshake the backlog admits has completed: waited for as
  // a state (a filler turns writable), with a generous deadline.
  {
    std::vector<pollfd> polls;
    for (const int filler : fillers)
      polls.push_back(pollfd{filler, POLLOUT, 0});
    bool connected = false;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!connected && std::chrono::steady_clock::now() < deadline) {
      if (::poll(polls.data(), polls.size(), 100) <= 0) continue;
      for (const auto& p : polls)
        connected = connected || (p.revents & POLLOUT) != 0;
    }
    REQUIRE(connected);
  }

  Options options = fast_options();
  options.connect_timeout = 500ms;
  options.retry.max_attempts = 1;
  auto transport = tfork::http::make_curl_transport(options);
  const auto result = transport->send(
      Request{"GET", "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)) + "/x", {}, {}});
  for (const int filler : fillers)
    ::close(filler);
  ::close(listener);

  REQUIRE_FALSE(result.has_value());
  // Kind::timeout is curl's own connect timeout; the kernel giving up on its SYN retries (after
  // minutes) would be Kind::connect.
  CHECK(result.error().kind == TransportError::Kind::timeout);
  CHECK(result.error().attempts == 1);
}

TEST_CASE("a stalled response ends with Kind::timeout after read_timeout", "[http]") {
  std::atomic<int> sends{0};
  TestServer server([&](const httplib::Request&, httplib::Response& response) {
    ++sends;
    server.hang();
    response.set_content("too late", "text/plain");
  });
  Options options = fast_options();
  options.read_timeout = 1000ms;
  options.retry.max_attempts = 2;
  auto transport = tfork::http::make_curl_transport(options);
  const auto result = transport->send(get(server, "/stall"));
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().kind == TransportError::Kind::timeout);
  CHECK(result.error().attempts == 2);  // timeouts are retried
  CHECK(sends.load() == 2);
  CHECK_THAT(result.error().message, Catch::Contains("timed out"));
  CHECK_THAT(result.error().message, Catch::Contains("127.0.0.1:" + std::to_string(server.port())));
}

TEST_CASE("cancel ends in-flight and pending requests promptly", "[http]") {
  std::atomic<int> arrived{0};
  TestServer server([&](const httplib::Request&, httplib::Response&) {
    ++arrived;
    server.hang();
  });
  std::atomic<bool> cancel{false};
  Options options = fast_options();
  options.cancel = &cancel;
  auto transport = tfork::http::make_curl_transport(options);
  std::vector<Request> requests;
  for (int i = 0; i < 6; ++i)
    requests.push_back(get(server, "/hang/" + std::to_string(i)));

  std::thread canceller([&] {
    wait_until([&] { return arrived.load() >= 3; });
    cancel = true;
  });
  std::vector<std::size_t> order;
  const auto results = transport->send_all(
      requests, 3, [&](std::size_t index, const Result&) { order.push_back(index); });
  canceller.join();

  REQUIRE(results.size() == 6);
  // Once each, in ascending index (send_all's contract when cancelled): the three in flight,
  // then the three never taken.
  CHECK(order == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});
  for (std::size_t i = 0; i < results.size(); ++i) {
    REQUIRE_FALSE(results[i].has_value());
    CHECK(results[i].error().kind == TransportError::Kind::cancelled);
    // Kind::cancelled, not timeout: the cancel ended them, not the 20 s read_timeout (the
    // handlers hang for 30 s). Three were in flight, three never left.
    CHECK(results[i].error().attempts == (i < 3 ? 1 : 0));
  }
  server.release();
}

TEST_CASE("cancel before sending, and instead of a retry", "[http]") {
  std::atomic<int> arrived{0};
  std::atomic<bool> cancel{false};
  TestServer server([&](const httplib::Request&, httplib::Response& response) {
    ++arrived;
    cancel = true;  // the CLI's SIGINT handler, while the response is on its way
    response.status = 503;
  });
  Options options = fast_options();
  options.cancel = &cancel;
  auto transport = tfork::http::make_curl_transport(options);

  const auto retried = transport->send(get(server, "/x"));
  REQUIRE_FALSE(retried.has_value());
  CHECK(retried.error().kind == TransportError::Kind::cancelled);
  CHECK(retried.error().attempts == 1);

  const auto never_sent = transport->send(get(server, "/y"));
  REQUIRE_FALSE(never_sent.has_value());
  CHECK(never_sent.error().kind == TransportError::Kind::cancelled);
  CHECK(never_sent.error().attempts == 0);
  CHECK(arrived.load() == 1);
}

TEST_CASE("requests arrive byte for byte: path, headers and body as given", "[http]") {
  struct Seen {
    std::string method, target, body;
    httplib::Headers headers;
  };
  std::mutex mutex;
  std::vector<Seen> seen;
  TestServer server([&](const httplib::Request& request, httplib::Response& response) {
    const std::lock_guard lock(mutex);
    seen.push_back(Seen{request.method, request.target, request.body, request.headers});
    response.status = 200;
  });
  auto transport = tfork::http::make_curl_transport(fast_options());
  const std::string host = "127.0.0.1:" + std::to_string(server.port());
  // Over 1 MB, where curl would otherwise ask for "Expect: 100-continue".
  std::string body(1536 * 1024, 'x');
  for (std::size_t i = 0; i < body.size(); i += 97)
    body[i] = static_cast<char>('a' + i % 26);

  const Request put{"PUT",
                    server.url("/b/a%2Fb%20c+d"),
                    {{"Host", host},
                     {"x-amz-date", "20240101T000000Z"},
                     {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"},
                     {"Authorization", "AWS4-HMAC-SHA256 Credential=AKID/x, Signature=abc"}},
                    body};
  const Request raw_path{"GET", server.url("//x/./y/../z"), {{"User-Agent", "custom/1"}}, {}};
  const Request empty_put{"PUT", server.url("/bucket"), {}, {}};
  const Request remove{"DELETE", server.url("/bucket/key"), {}, {}};
  const auto results = transport->send_all(std::vector{put, raw_path, empty_put, remove}, 2);
  for (const auto& result : results) {
    REQUIRE(result.has_value());
    CHECK(result->status == 200);
  }

  const std::lock_guard lock(mutex);
  REQUIRE(seen.size() == 4);
  std::sort(seen.begin(), seen.end(),
            [](const Seen& a, const Seen& b) { return a.target < b.target; });
  const Seen& got_raw = seen[0];  // "//x/./y/../z"
  const Seen& got_put = seen[1];  // "/b/a%2Fb%20c+d"
  const Seen& got_empty_put = seen[2];
  const Seen& got_delete = seen[3];

  CHECK(got_put.method == "PUT");
  CHECK(got_put.target == "/b/a%2Fb%20c+d");
  CHECK(got_put.body == body);
  auto header = [](const Seen& s, const std::string& name) {
    std::vector<std::string> values;
    for (auto [it, end] = s.headers.equal_range(name); it != end; ++it)
      values.push_back(it->second);
    return values;
  };
  CHECK(header(got_put, "Host") == std::vector<std::string>{host});
  CHECK(header(got_put, "x-amz-date") == std::vector<std::string>{"20240101T000000Z"});
  CHECK(header(got_put, "x-amz-content-sha256") == std::vector<std::string>{"UNSIGNED-PAYLOAD"});
  CHECK(header(got_put, "Authorization") ==
        std::vector<std::string>{"AWS4-HMAC-SHA256 Credential=AKID/x, Signature=abc"});
  CHECK(header(got_put, "Content-Length") == std::vector<std::string>{std::to_string(body.size())});
  CHECK(header(got_put, "User-Agent") == std::vector<std::string>{"tfork/test"});
  for (const Seen* s : {&got_put, &got_raw, &got_empty_put, &got_delete}) {
    CHECK(header(*s, "Expect").empty());
    CHECK(header(*s, "Content-Type").empty());
    CHECK(header(*s, "Accept").empty());
    CHECK(header(*s, "Transfer-Encoding").empty());
  }

  CHECK(got_raw.method == "GET");
  CHECK(got_raw.target == "//x/./y/../z");
  CHECK(header(got_raw, "User-Agent") == std::vector<std::string>{"custom/1"});

  CHECK(got_empty_put.method == "PUT");
  CHECK(got_empty_put.target == "/bucket");
  CHECK(header(got_empty_put, "Content-Length") == std::vector<std::string>{"0"});

  CHECK(got_delete.method == "DELETE");
  CHECK(got_delete.target == "/bucket/key");
  CHECK(got_delete.body.empty());
}

TEST_CASE("HEAD returns status and headers without reading a body", "[http]") {
  TestServer server([&](const httplib::Request&, httplib::Response& response) {
    response.set_header("x-amz-request-id", "req-1");
    response.set_content("hello world", "text/plain");
  });
  auto transport = tfork::http::make_curl_transport(fast_options());
  const auto result = transport->send(Request{"HEAD", server.url("/bucket"), {}, {}});
  REQUIRE(result.has_value());
  CHECK(result->status == 200);
  CHECK(result->body.empty());
  CHECK(result->header("content-length") == "11");
  CHECK(result->header("X-Amz-Request-Id") == "req-1");
  // And the connection is still good for the next request.
  const auto next = transport->send(get(server, "/bucket"));
  REQUIRE(next.has_value());
  CHECK(next->body == "hello world");
}

TEST_CASE("--debug logs request and response lines with secrets redacted", "[http]") {
  TestServer server([&](const httplib::Request& request, httplib::Response& response) {
    if (request.path == "/iam") {
      response.status = 400;
      response.set_content(R"({"SecretAccessKey":"wJalrXUtnFEMI/K7MDENG"})", "application/json");
    } else {
      response.status = 403;
      response.set_content("<Error><Code>AccessDenied</Code></Error>", "application/xml");
    }
  });
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
  auto logger = std::make_shared<spdlog::logger>("http", sink);
  logger->set_level(spdlog::level::debug);
  spdlog::drop("http");
  spdlog::register_logger(logger);

  Options options = fast_options();
  options.debug = true;
  auto transport = tfork::http::make_curl_transport(options);
  const std::string signature = "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7";
  const Request request{
      "GET",
      server.url("/logged?X-Amz-Credential=AKIDEXAMPLE&X-Amz-Signature=" + signature),
      {{"Authorization",
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240101/auto/s3/aws4_request, "
        "SignedHeaders=host;x-amz-date, Signature=" +
            signature},
       {"x-amz-security-token", "SESSIONTOKENVALUE"},
       {"x-amz-date", "20240101T000000Z"}},
      {}};
  REQUIRE(transport->send(request).has_value());
  REQUIRE(transport->send(get(server, "/iam")).has_value());
  logger->flush();
  spdlog::drop("http");
  const std::string log = captured.str();

  CHECK_THAT(log, Catch::Contains(
                      "> GET /logged?X-Amz-Credential=AKIDEXAMPLE&X-Amz-Signature=*** HTTP/1.1"));
  CHECK_THAT(log,
             Catch::Contains("Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240101/"
                             "auto/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=***"));
  CHECK_THAT(log, Catch::Contains("x-amz-security-token: ***"));
  CHECK_THAT(log, Catch::Contains("x-amz-date: 20240101T000000Z"));
  CHECK_THAT(log, Catch::Contains("< HTTP/1.1 403 Forbidden"));
  CHECK_THAT(log, Catch::Contains("AccessDenied"));  // a short error body is shown
  CHECK(log.find(signature) == std::string::npos);
  CHECK(log.find("SESSIONTOKENVALUE") == std::string::npos);
  CHECK(log.find("wJalrXUtnFEMI") == std::string::npos);
}

TEST_CASE("is_retryable_response and backoff_ceiling", "[http]") {
  using tfork::http::backoff_ceiling;
  using tfork::http::is_retryable_once_sent;
  using tfork::http::is_retryable_response;
  using tfork::http::Response;
  auto response = [](int status, std::string body = {}) {
    Response r;
    r.status = status;
    r.body = std::move(body);
    return r;
  };
  for (const int status : {408, 429, 500, 502, 503, 504})
    CHECK(is_retryable_response(response(status)));
  for (const int status : {200, 204, 301, 400, 403, 404, 409, 501}) {
    CHECK_FALSE(is_retryable_response(response(status)));
  }
  for (const int status : {408, 429, 503})
    CHECK(is_retryable_once_sent(response(status)));
  for (const int status : {500, 502, 504, 400})
    CHECK_FALSE(is_retryable_once_sent(response(status)));
  auto asked = response(503);
  asked.headers.emplace_back("Retry-After", "3");
  CHECK(tfork::http::retry_after(asked, 20000ms) == 3000ms);
  CHECK(tfork::http::retry_after(asked, 1000ms) == 1000ms);
  asked.headers.back().second = "Wed, 21 Oct 2015 07:28:00 GMT";
  CHECK_FALSE(tfork::http::retry_after(asked, 20000ms).has_value());
  CHECK_FALSE(tfork::http::retry_after(response(503), 20000ms).has_value());
  CHECK(is_retryable_response(response(400, k_slow_down)));
  CHECK_FALSE(is_retryable_response(response(200, k_slow_down)));

  tfork::http::RetryPolicy policy;
  policy.base_delay = 100ms;
  policy.max_delay = 1000ms;
  CHECK(backoff_ceiling(policy, 1) == 100ms);
  CHECK(backoff_ceiling(policy, 2) == 200ms);
  CHECK(backoff_ceiling(policy, 4) == 800ms);
  CHECK(backoff_ceiling(policy, 5) == 1000ms);
  CHECK(backoff_ceiling(policy, 1000) == 1000ms);
}

namespace {

// One connection, one request: returns the request head and body exactly as received
// (cpp-httplib normalises some of it, e.g. it drops headers with empty values).
class RawServer {
 public:
  RawServer() {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(listener_ >= 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    socklen_t length = sizeof address;
    REQUIRE(::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    REQUIRE(::listen(listener_, 4) == 0);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve_one(); });
  }
  ~RawServer() {
    ::shutdown(listener_, SHUT_RDWR);  // wakes accept() if no request came
    if (thread_.joinable()) thread_.join();
    ::close(listener_);
  }
  RawServer(const RawServer&) = delete;
  RawServer& operator=(const RawServer&) = delete;

  int port() const { return port_; }
  // Waits for the one exchange to end.
  const std::string& received() {
    if (thread_.joinable()) thread_.join();
    return received_;
  }

 private:
  void serve_one() {
    const int connection = ::accept(listener_, nullptr, nullptr);
    if (connection < 0) return;
    char buffer[4096];
    std::size_t body_length = 0;
    std::size_t head_end = std::string::npos;
    while (head_end == std::string::npos || received_.size() < head_end + 4 + body_length) {
      const auto n = ::recv(connection, buffer, sizeof buffer, 0);
      if (n <= 0) break;
      received_.append(buffer, static_cast<std::size_t>(n));
      if (head_end == std::string::npos &&
          (head_end = received_.find("\r\n\r\n")) != std::string::npos) {
        if (const auto at = received_.find("Content-Length: ");
            at != std::string::npos && at < head_end) {
          body_length = std::stoul(received_.substr(at + 16));
        }
      }
    }
    const std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    (void)::send(connection, reply.data(), reply.size(), MSG_NOSIGNAL);
    ::close(connection);
  }

  int listener_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::string received_;
};

std::vector<std::string> sorted_lines(const std::string& head) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < head.size()) {
    const auto end = head.find("\r\n", start);
    lines.push_back(head.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 2;
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

}  // namespace

TEST_CASE("the request head on the wire holds exactly the given headers", "[http]") {
  RawServer server;
  auto transport = tfork::http::make_curl_transport(fast_options());
  const std::string host = "127.0.0.1:" + std::to_string(server.port());
  const Request put{"PUT",
                    "http://" + host + "/b/a%2Fb%20c+d",
                    {{"Host", host},
                     {"x-amz-date", "20240101T000000Z"},
                     {"x-amz-meta-empty", ""},
                     {"x-amz-content-sha256", "UNSIGNED-PAYLOAD"}},
                    "hello"};
  const auto result = transport->send(put);
  REQUIRE(result.has_value());
  CHECK(result->status == 200);

  const std::string wire = server.received();
  const auto head_end = wire.find("\r\n\r\n");
  REQUIRE(head_end != std::string::npos);
  CHECK(wire.substr(0, wire.find("\r\n")) == "PUT /b/a%2Fb%20c+d HTTP/1.1");
  CHECK(wire.substr(head_end + 4) == "hello");
  const std::vector<std::string> expected = sorted_lines(
      "PUT /b/a%2Fb%20c+d HTTP/1.1\r\nHost: " + host +
      "\r\nx-amz-date: 20240101T000000Z\r\nx-amz-meta-empty:\r\n"
      "x-amz-content-sha256: UNSIGNED-PAYLOAD\r\nUser-Agent: tfork/test\r\nContent-Length: 5");
  CHECK(sorted_lines(wire.substr(0, head_end)) == expected);
}

TEST_CASE("a retry goes out re-signed: the request's resign() is sent instead", "[http]") {
  std::mutex mutex;
  std::vector<std::string> dates;
  TestServer server([&](const httplib::Request& request, httplib::Response& response) {
    const std::lock_guard lock(mutex);
    dates.push_back(request.get_header_value("x-amz-date"));
    response.status = dates.size() == 1 ? 503 : 200;
  });
  auto transport = tfork::http::make_curl_transport(fast_options());
  Request request = get(server, "/signed");
  request.headers.emplace_back("x-amz-date", "20261130T120000Z");
  int resigned = 0;
  request.resign = [&] {
    ++resigned;
    Request again = get(server, "/signed");
    again.headers.emplace_back("x-amz-date", "20261130T120500Z");
    return again;
  };
  const auto result = transport->send(request);
  REQUIRE(result.has_value());
  CHECK(result->status == 200);
  CHECK(resigned == 1);
  const std::lock_guard lock(mutex);
  CHECK(dates == std::vector<std::string>{"20261130T120000Z", "20261130T120500Z"});
}

TEST_CASE("ConcurrencyWindow: halves on sustained throttling, grows by one otherwise", "[http]") {
  using tfork::http::ConcurrencyWindow;
  constexpr auto sample = ConcurrencyWindow::k_min_sample;  // answers per decision, at least
  ConcurrencyWindow window(64);
  CHECK(window.limit() == 64);
  CHECK(window.sporadic());
  for (int i = 0; i < 64; ++i)
    window.answered(i % 2 == 0);  // half of a window throttled
  CHECK(window.limit() == 32);
  CHECK_FALSE(window.sporadic());  // a throttled request's backoff doubles again
  for (std::size_t i = 0; i < sample; ++i)
    window.answered(i < 15);  // fewer than half: not sustained
  CHECK(window.limit() == 33);
  for (int round = 0; round < 40; ++round)
    for (int i = 0; i < 64; ++i)
      window.answered(false);
  CHECK(window.limit() == 64);  // never above max_parallel
  CHECK(window.sporadic());
  for (int round = 0; round < 20; ++round)
    for (std::size_t i = 0; i < std::max<std::size_t>(window.limit(), sample); ++i)
      window.answered(true);
  CHECK(window.limit() == 1);  // never below one
  // A small window decides on k_min_sample answers, not on its own two.
  window.answered(true);
  window.answered(true);
  CHECK(window.limit() == 1);
  // A window of one cannot narrow: sustained throttling is told by the answers alone.
  ConcurrencyWindow single(1);
  for (std::size_t i = 0; i < sample; ++i)
    single.answered(true);
  CHECK(single.limit() == 1);
  CHECK_FALSE(single.sporadic());
}

TEST_CASE("ConcurrencyWindow: one answer in five throttled at random never sinks it", "[http]") {
  // A server that throttles a fifth of all requests whatever the rate (tfork serve
  // --fail-rate 0.2): halving would not lower that share, so the window must stay wide.
  tfork::http::ConcurrencyWindow window(64);
  std::mt19937 random(7);
  std::bernoulli_distribution throttled(0.2);
  std::size_t narrowest = 64;
  for (int i = 0; i < 20000; ++i) {
    window.answered(throttled(random));
    narrowest = std::min(narrowest, window.limit());
  }
  CHECK(narrowest >= 48);
}

TEST_CASE("backoff: a throttled retry waits multiples of its answer's time, at most the base's",
          "[http]") {
  using tfork::http::backoff_ceiling;
  tfork::http::RetryPolicy policy;
  policy.base_delay = 100ms;
  policy.max_delay = 1000ms;
  CHECK(backoff_ceiling(policy, 1, 25ms) == 25ms);
  CHECK(backoff_ceiling(policy, 3, 25ms) == 100ms);
  CHECK(backoff_ceiling(policy, 1, 400ms) == 100ms);  // a slow answer: the base's
  CHECK(backoff_ceiling(policy, 2, 0ms) == 2ms);      // at least a millisecond
  CHECK(backoff_ceiling(policy, 9, 25ms) == 1000ms);
}

TEST_CASE("send_all narrows its window when the server throttles above a concurrency", "[http]") {
  // A server that answers 503 SlowDown whenever more than 4 requests are in flight.
  std::atomic<int> in_flight{0};
  std::atomic<int> throttled{0};
  TestServer server([&](const httplib::Request&, httplib::Response& response) {
    const int now = ++in_flight;
    std::this_thread::sleep_for(10ms);
    if (now > 4) {
      ++throttled;
      response.status = 503;
      response.set_content(k_slow_down, "application/xml");
    }
    --in_flight;
  });
  Options options = fast_options();
  options.retry.max_attempts = 3;
  auto transport = tfork::http::make_curl_transport(options);
  std::vector<Request> requests;
  for (int i = 0; i < 120; ++i)
    requests.push_back(get(server, "/item/" + std::to_string(i)));
  const auto results = transport->send_all(requests, 20);
  int ok = 0;
  for (const auto& result : results)
    ok += result.has_value() && result->status == 200;
  // At full width (20) most sends would be throttled and many requests would run out of
  // attempts; the narrowed window gets every request through.
  CHECK(ok == 120);
  CHECK(throttled.load() > 0);
}

// ---- send_batch keeps its contract (tfork/http/transport.hpp, at Transport::send_batch)

namespace {

// A batch that records how the transport drives it. Its first `initial` requests are ready at
// once; each answer to request i < `chained` brings one follow-up (a chain per item, as the
// workflow's batch runner makes them), ready only from `follow_up_delay` after that answer.
class RecordingBatch final : public tfork::http::Batch {
 public:
  RecordingBatch(const TestServer& server, std::size_t initial, std::size_t chained,
                 std::chrono::milliseconds follow_up_delay = 0ms)
      : server_(server), chained_(chained), delay_(follow_up_delay) {
    for (std::size_t i = 0; i < initial; ++i)
      add(std::chrono::steady_clock::now());
  }

  std::optional<Ready> next() override {
    check_thread();
    if (throw_on_next) throw std::runtime_error("next() failed");
    const auto now = std::chrono::steady_clock::now();
    for (std::size_t id = 0; id < requests_.size(); ++id) {
      if (taken[id] || ready_at_[id] > now) continue;
      taken[id] = true;
      ++in_flight;
      most_in_flight = std::max(most_in_flight, in_flight);
      taken_at[id] = now;
      return Ready{id, &requests_[id]};
    }
    return std::nullopt;
  }

  std::optional<std::chrono::steady_clock::time_point> next_ready_at() const override {
    check_thread();
    std::optional<std::chrono::steady_clock::time_point> earliest;
    for (std::size_t id = 0; id < requests_.size(); ++id)
      if (!taken[id] && (!earliest || ready_at_[id] < *earliest)) earliest = ready_at_[id];
    return earliest;
  }

  bool exhausted() const override {
    check_thread();
    return stop_taking || std::all_of(taken.begin(), taken.end(), [](bool t) { return t; });
  }

  void done(std::size_t id, Result result) override {
    check_thread();
    REQUIRE(id < requests_.size());
    REQUIRE(taken[id]);
    --in_flight;
    ++answers[id];
    results.emplace(id, std::move(result));
    order.push_back(id);
    if (throw_on_done) throw std::runtime_error("done() failed");
    if (id < chained_) add(std::chrono::steady_clock::now() + delay_);
  }

  std::size_t size() const { return requests_.size(); }

  std::vector<bool> taken;
  std::vector<int> answers;  // done() calls per id
  std::vector<std::chrono::steady_clock::time_point> taken_at;
  std::map<std::size_t, Result> results;
  std::vector<std::size_t> order;  // ids in the order done() saw them
  int in_flight = 0;
  int most_in_flight = 0;
  bool stop_taking = false;
  bool throw_on_done = false;
  bool throw_on_next = false;
  mutable bool wrong_thread = false;

 private:
  void add(std::chrono::steady_clock::time_point ready_at) {
    const auto id = requests_.size();
    requests_.push_back(get(server_, "/item/" + std::to_string(id)));
    ready_at_.push_back(ready_at);
    taken.push_back(false);
    answers.push_back(0);
    taken_at.emplace_back();
  }
  void check_thread() const {
    if (std::this_thread::get_id() != caller_) wrong_thread = true;
  }

  const TestServer& server_;
  std::size_t chained_;
  std::chrono::milliseconds delay_;
  std::thread::id caller_ = std::this_thread::get_id();
  // A std::deque keeps every request where it is while follow-ups are added: the transport
  // holds a pointer to each until its done().
  std::deque<Request> requests_;
  std::vector<std::chrono::steady_clock::time_point> ready_at_;
};

}  // namespace

TEST_CASE("send_batch keeps its contract: once per request, on the caller's thread",
          "[http][contract]") {
  // Answers in an order of their own: a request for an even item takes longer.
  TestServer server([](const httplib::Request& request, httplib::Response& response) {
    const auto item = std::stoi(request.path.substr(request.path.rfind('/') + 1));
    std::this_thread::sleep_for(item % 2 == 0 ? 15ms : 1ms);
    response.set_content(std::to_string(item), "text/plain");
  });
  auto transport = tfork::http::make_curl_transport(fast_options());
  // 24 requests at once, the first 10 of which each bring a follow-up, ready 20 ms later.
  RecordingBatch batch(server, 24, 10, 20ms);
  transport->send_batch(batch, 6);

  REQUIRE(batch.size() == 34);
  CHECK_FALSE(batch.wrong_thread);
  for (std::size_t id = 0; id < batch.size(); ++id) {
    CHECK(batch.taken[id]);
    CHECK(batch.answers[id] == 1);  // exactly once
    REQUIRE(batch.results.at(id).has_value());
    CHECK(batch.results.at(id)->body == std::to_string(id));
  }
  CHECK(batch.most_in_flight <= 6);  // never more taken and unanswered than the window
  CHECK(batch.most_in_flight > 1);
  // Answers came in their own order, not in id order.
  CHECK_FALSE(std::is_sorted(batch.order.begin(), batch.order.end()));
}

TEST_CASE("send_batch waits for a request the batch holds back, then sends it",
          "[http][contract]") {
  std::atomic<int> served{0};
  TestServer server([&](const httplib::Request&, httplib::Response&) { ++served; });
  auto transport = tfork::http::make_curl_transport(fast_options());
  // One request, whose answer brings one follow-up ready 150 ms later: nothing is in flight
  // meanwhile, and the batch is not exhausted, so the transport must wait for it.
  RecordingBatch batch(server, 1, 1, 150ms);
  transport->send_batch(batch, 4);
  REQUIRE(batch.size() == 2);
  CHECK(batch.answers == std::vector<int>{1, 1});
  CHECK(served.load() == 2);
  CHECK_FALSE(batch.wrong_thread);
}

TEST_CASE("send_batch: a retried request is answered once, with its attempts", "[http][contract]") {
  std::atomic<int> arrived{0};
  TestServer server([&](const httplib::Request&, httplib::Response& response) {
    response.status = ++arrived == 1 ? 503 : 200;
  });
  auto transport = tfork::http::make_curl_transport(fast_options());
  RecordingBatch batch(server, 1, 0);
  transport->send_batch(batch, 1);
  CHECK(batch.answers == std::vector<int>{1});
  REQUIRE(batch.results.at(0).has_value());
  CHECK(batch.results.at(0)->status == 200);
  CHECK(batch.results.at(0)->attempts == 2);
}

TEST_CASE("send_batch cancelled: what was taken ends cancelled in ascending id, and it returns",
          "[http][contract]") {
  std::atomic<int> arrived{0};
  TestServer server([&](const httplib::Request& request, httplib::Response& response) {
    ++arrived;
    // Item 1 is throttled for good: it is waiting for a retry when the cancel comes.
    if (request.path == "/item/1") {
      response.status = 503;
      return;
    }
    server.hang();
  });
  std::atomic<bool> cancel{false};
  Options options = fast_options();
  options.retry.base_delay = 10000ms;  // the retry of item 1 waits long past the cancel
  options.retry.max_delay = 10000ms;
  options.cancel = &cancel;
  auto transport = tfork::http::make_curl_transport(options);
  RecordingBatch batch(server, 8, 0);
  std::thread canceller([&] {
    wait_until([&] { return arrived.load() >= 4; });
    cancel = true;
  });
  transport->send_batch(batch, 4);
  canceller.join();
  server.release();

  CHECK_FALSE(batch.exhausted());  // it returned all the same
  std::vector<std::size_t> taken_ids;
  for (std::size_t id = 0; id < batch.size(); ++id) {
    if (!batch.taken[id]) {
      CHECK(batch.answers[id] == 0);  // never taken: no call
      continue;
    }
    taken_ids.push_back(id);
    CHECK(batch.answers[id] == 1);
    REQUIRE_FALSE(batch.results.at(id).has_value());
    CHECK(batch.results.at(id).error().kind == TransportError::Kind::cancelled);
  }
  CHECK(taken_ids.size() >= 4);
  CHECK(std::is_sorted(batch.order.begin(), batch.order.end()));  // ascending id
  CHECK(batch.order == taken_ids);
}

TEST_CASE("send_batch: an exception from the batch leaves at once; the transport stays usable",
          "[http][contract]") {
  TestServer server([](const httplib::Request&, httplib::Response& response) {
    response.set_content("ok", "text/plain");
  });
  auto transport = tfork::http::make_curl_transport(fast_options());
  RecordingBatch throwing(server, 6, 0);
  throwing.throw_on_done = true;
  CHECK_THROWS_WITH(transport->send_batch(throwing, 3), "done() failed");
  CHECK(std::count(throwing.answers.begin(), throwing.answers.end(), 1) == 1);  // no more calls

  RecordingBatch failing_next(server, 2, 0);
  failing_next.throw_on_next = true;
  CHECK_THROWS_WITH(transport->send_batch(failing_next, 3), "next() failed");

  RecordingBatch after(server, 5, 0);
  transport->send_batch(after, 3);
  CHECK(after.answers == std::vector<int>(5, 1));
}
