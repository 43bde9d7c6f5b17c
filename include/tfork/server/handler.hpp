// SPDX-License-Identifier: Apache-2.0
#pragma once
// The pure request handler of `tfork serve` (style.md #8): a Request in, a reply out, over a
// Store. No sockets, no threads, no global state; the socket layer and tests drive it the same
// way.

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
#include <variant>

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

// A store write that an operation prepared and did not wait for: a PutObject. It carries
// everything the write depends on, its conditions included, into the store's transaction,
// where they are judged (style.md, "One road per request").
struct PendingWrite {
  std::string bucket;
  std::string key;
  store::NewObject object;
  store::WriteConditions conditions;
};

// What running a request gives: its response now, or its pending store write.
using Reply = std::variant<Response, PendingWrite>;

// One road for every request, the same for the socket layer and for tests:
//   admit(head) -> receiver(head, admission), fed the body -> run(head, admission, body)
//     -> Response, or PendingWrite -> commit(head, admission, write, answered)
//     -> answered(Response).
// The head is authenticated before any body is read (or 100-continue sent), and the body
// streams in bounded memory. The handler knows no threads: which thread calls run() is the
// socket layer's choice, told by may_wait().
class Handler {
 public:
  Handler(store::Store& store, HandlerOptions options);

  // From the head alone (its body is not looked at): the target is parsed, the signature
  // verified (O(1) work whatever the body) and the declared length checked. An error comes
  // back as the response to send.
  std::expected<Admission, Response> admit(const Request& head);
  // Where the body goes: a file in the store's tmp_dir() for large object bodies, else memory
  // (1 MiB at most).
  std::unique_ptr<BodyReceiver> receiver(const Request& head, const Admission& admission);
  // Runs the operation with the received body. An error it meets is its error response.
  Reply run(const Request& head, const Admission& admission, DecodedBody body);
  // Queues a pending write into the store's next group commit; `answered` gets the response on
  // the store's committer thread (or before commit returns, for a write refused at once).
  // `head` and `admission` must outlive the call of `answered`.
  void commit(const Request& head, const Admission& admission, PendingWrite write,
              std::function<void(Response)> answered);
  // Whether run() may wait for the store (any write but a PendingWrite's, which run() only
  // prepares): a thread that serves other connections must not call it then.
  bool may_wait(const Request& head, const Admission& admission, const DecodedBody& body) const;
  // The response for an error found while the body was received (or before admission).
  Response reject(const Request& head, const Admission* admission, const S3Error& error);

  // The response of a reply: a pending write is committed and waited for (the calling thread
  // sleeps until the group commit).
  Response settle(const Request& head, const Admission& admission, Reply reply);
  // The whole road for a request whose body is already in memory: admit, receive, run, settle.
  Response handle(const Request& request);

 private:
  // How errors are answered, settled while the request runs (an IAM call is known by its body).
  struct ErrorForm {
    bool json = false;
    bool iam = false;
  };
  // The reply `produce` makes, or the error response for what it throws; a response is
  // stamped with the request id.
  Reply answer(const Request& request, const Admission& admission, const ErrorForm& form,
               const std::function<Reply()>& produce);
  // The deferred IAM case: the signature covers the body's hash.
  Reply run_signed_by_body(const Request& head, const Admission& admission, DecodedBody body);
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
