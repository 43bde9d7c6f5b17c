// SPDX-License-Identifier: Apache-2.0
// The floor of `scripts/bench` section 5: an HTTP server that does no work. It runs on the
// HTTP library and settings of `tfork serve` (libmicrohttpd, epoll, one event thread per
// core, TCP_NODELAY) and answers every request at once: 200 with an empty body to a PUT
// (whose body it reads and drops), 200 with 4 KiB to anything else. A client's latency
// against it is what that client and the HTTP layer cost on their own, on the same cores.
//
// usage: bench_null_server   (listens on 127.0.0.1, port 0; prints "port N", runs until killed)
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <microhttpd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace {

const std::string k_object(4096, 'x');

MHD_Result answer(void*, MHD_Connection* connection, const char*, const char* method, const char*,
                  const char*, size_t* upload_size, void** state) {
  if (*state == nullptr) {  // the head: come back for the body, if any
    *state = connection;
    return MHD_YES;
  }
  if (*upload_size > 0) {  // a piece of the body: dropped
    *upload_size = 0;
    return MHD_YES;
  }
  const bool put = std::strcmp(method, "PUT") == 0;
  MHD_Response* response = MHD_create_response_from_buffer(
      put ? 0 : k_object.size(), const_cast<char*>(k_object.data()), MHD_RESPMEM_PERSISTENT);
  MHD_add_response_header(response, "ETag", "\"0123456789abcdef0123456789abcdef\"");
  const MHD_Result queued = MHD_queue_response(connection, MHD_HTTP_OK, response);
  MHD_destroy_response(response);
  return queued;
}

// As `tfork serve` does: a small response on a reused connection must not wait for the
// client's delayed ACK.
void no_delay(void*, MHD_Connection* connection, void**, MHD_ConnectionNotificationCode code) {
  if (code != MHD_CONNECTION_NOTIFY_STARTED) return;
  const auto* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
  const int yes = 1;
  if (info) ::setsockopt(info->connect_fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
}

}  // namespace

int main() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int yes = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::listen(fd, 1024) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    std::perror("bench_null_server: listen");
    return 1;
  }
  const unsigned threads = std::max(2U, std::thread::hardware_concurrency());
  MHD_Daemon* daemon =
      MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, nullptr, nullptr,
                       answer, nullptr, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_THREAD_POOL_SIZE,
                       threads, MHD_OPTION_CONNECTION_TIMEOUT, 60U, MHD_OPTION_NOTIFY_CONNECTION,
                       no_delay, nullptr, MHD_OPTION_END);
  if (daemon == nullptr) {
    std::fputs("bench_null_server: cannot start the HTTP daemon\n", stderr);
    return 1;
  }
  std::printf("port %u\n", ntohs(address.sin_port));
  std::fflush(stdout);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  int received = 0;
  sigwait(&stop, &received);
  MHD_stop_daemon(daemon);
  return 0;
}
