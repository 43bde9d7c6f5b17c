// SPDX-License-Identifier: Apache-2.0
#pragma once
// The pure request handler of `tfork serve` (style.md #8): a Request in, a Response out,
// over a Store. No sockets, no global state; tests and the fault injection of the socket
// layer wrap it.

#include "tfork/rules/redaction.hpp"
#include "tfork/server/auth.hpp"
#include "tfork/server/body.hpp"
#include "tfork/server/http_types.hpp"
#include "tfork/server/target.hpp"
#include "tfork/server/variance.hpp"
#include "tfork/store/store.hpp"

#include <chrono>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace tfork::server {

struct HandlerOptions {
  std::string root_access_key;
  std::string root_secret_key;
  // The server's clock (tests pin it); used for skew, presign expiry and nothing else.
  std::function<std::chrono::system_clock::time_point()> clock = [] {
    return std::chrono::system_clock::now();
  };
  VarianceOptions variance;  // how it departs from its best behaviour (cli.md §8)
};

// What the head of a request decided (Handler::admit): who sent it and where its body goes.
struct Admission {
  std::string request_id;
  std::chrono::system_clock::time_point now;
  Target target;
  bool json = false;  // errors are answered in JSON (Tigris endpoints)
  // nullopt: a POST to the service root (IAM) that signs its body's hash instead of sending
  // x-amz-content-sha256; it is authenticated once its (small) body has arrived.
  std::optional<Authenticated> auth;
  bool object_body = false;  // PutObject / UploadPart: the body streams to a file
};

class Later;  // operations.hpp

// A request is handled in two steps so that the socket layer can authenticate from the head
// before it reads (or asks with 100-continue for) any body, and stream the body in bounded
// memory: admit(head) -> receiver(head, admission) fed with the body -> finish(...).
// handle() does all three with a body already in memory (a small PutObject through start(),
// as the socket layer runs it, waiting for its answer).
class Handler {
 public:
  Handler(store::Store& store, HandlerOptions options);
  Response handle(const Request& request);

  // From the head alone (its body is not looked at): the target is parsed, the signature
  // verified (O(1) work whatever the body) and the declared length checked. An error comes
  // back as the response to send.
  std::expected<Admission, Response> admit(const Request& head);
  // Where the body goes: a file in the store's tmp_dir() for object bodies, else memory
  // (1 MiB at most).
  std::unique_ptr<BodyReceiver> receiver(const Request& head, const Admission& admission);
  // Runs the operation with the received body.
  Response finish(const Request& head, const Admission& admission, DecodedBody body);
  // Whether start() may take the request: a PutObject whose body is in memory. Its only wait is
  // the store's group commit, which it need not wait for on a thread of its own.
  bool can_start(const Request& head, const Admission& admission, const DecodedBody& body) const;
  // Runs such a request up to its store write, which joins the next group commit: `done` gets
  // the response on the store's committer thread, or before start returns when the request
  // fails first. `head` and `admission` must outlive the call of `done`.
  void start(const Request& head, const Admission& admission, DecodedBody body,
             std::function<void(Response)> done);
  // The response for an error found while the body was received (or before admission).
  Response reject(const Request& head, const Admission* admission, const S3Error& error);

 private:
  class Pending;
  // How errors are answered, settled while the request runs (an IAM call is known by its body).
  struct ErrorForm {
    bool json = false;
    bool iam = false;
  };
  // Runs the operation; nullopt when it was handed to `later` (Context::deferred).
  std::optional<Response> run(const Request& request, const Admission& admission, DecodedBody body,
                              std::shared_ptr<Later> later = nullptr);
  // The response `produce` makes, or the error response for what it throws; stamped with the
  // request id. nullopt when `produce` gives none (a deferred operation).
  std::optional<Response> answer(const Request& request, const Admission& admission,
                                 const ErrorForm& form,
                                 const std::function<std::optional<Response>()>& produce);
  KeyLookup key_lookup();

  store::Store& store_;
  HandlerOptions options_;
  Variance variance_;
};

// 16 upper-case hex digits, as S3 and s3rver put in x-amz-request-id.
std::string new_request_id();

// A request target fit for the log: a presigned URL's signature and session token masked, by
// the rule the client's --debug lines use (tfork/rules/redaction.hpp).
inline std::string loggable_target(std::string_view target) {
  return rules::redact_target(target);
}

}  // namespace tfork::server
