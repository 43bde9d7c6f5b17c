#pragma once
// The pure request handler of `tfork serve` (style.md #8): a Request in, a Response out,
// over a Store. No sockets, no global state; tests and the fault injection of the socket
// layer wrap it.

#include "tfork/server/http_types.hpp"
#include "tfork/store/store.hpp"

#include <chrono>
#include <functional>
#include <string>

namespace tfork::server {

struct HandlerOptions {
  std::string root_access_key;
  std::string root_secret_key;
  // The server's clock (tests pin it); used for skew, presign expiry and nothing else.
  std::function<std::chrono::system_clock::time_point()> clock = [] {
    return std::chrono::system_clock::now();
  };
};

class Handler {
 public:
  Handler(store::Store& store, HandlerOptions options);
  Response handle(const Request& request);

 private:
  store::Store& store_;
  HandlerOptions options_;
};

// 16 upper-case hex digits, as S3 and s3rver put in x-amz-request-id.
std::string new_request_id();

// A request target fit for the log: a presigned URL's signature and session token masked.
std::string loggable_target(std::string_view target);

}  // namespace tfork::server
