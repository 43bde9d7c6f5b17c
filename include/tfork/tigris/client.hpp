// SPDX-License-Identifier: Apache-2.0
#pragma once
// Typed requests in, signed wire requests out. An Operation says what to do (bucket, key,
// query, Tigris headers) without any addressing or signing; the Client turns it into the
// exact bytes for the configured endpoint (path- or virtual-hosted style) and signs every
// header with SigV4 (so every X-Tigris-* header is signed, tigris-wire.md §1.2).

#include "tfork/core/error.hpp"
#include "tfork/http/transport.hpp"
#include "tfork/sigv4/signer.hpp"

#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace tfork::tigris {

enum class Api { s3, iam };

struct Operation {
  std::string name{};  // "CreateBucket", for logs and errors
  Api api = Api::s3;
  std::string method{};
  std::string bucket{};  // empty for service-level calls
  std::string key{};     // object key (decoded); empty for bucket calls
  std::vector<std::pair<std::string, std::string>> query{};  // decoded names and values, in order
  http::Headers headers{};
  std::string body{};
  // The Tigris-only routes (bucket settings PATCH, merge, rebase) are bound on the endpoint's
  // own host: the official SDKs send them path-style whatever the S3 addressing
  // (tigris-wire.md §10), so they always go path-style.
  bool path_style = false;
  // http::Request::resend_if_unanswered: false for what must not happen twice (a snapshot
  // taken, a merge, a rebase); the workflow checks the state before it sends one again.
  bool resend_if_unanswered = true;
};

struct ClientSettings {
  std::string endpoint;      // "https://t3.storage.dev"
  std::string iam_endpoint;  // "https://iam.storageapi.dev"
  std::string region = "auto";
  bool path_style = false;
  sigv4::Credentials credentials;
};

class Client {
 public:
  using Clock = std::function<sigv4::Clock::time_point()>;

  Client(ClientSettings settings, http::Transport& transport, Clock clock = {});

  // The signed wire request for an operation (what --dry-run prints and tests inspect).
  http::Request prepare(const Operation& operation) const;

  http::Result send(const Operation& operation);
  std::vector<http::Result> send_all(
      std::span<const Operation> operations, std::size_t max_parallel,
      const std::function<void(std::size_t, const http::Result&)>& on_done = {});

  // The batch's requests through the transport (http::Transport::send_batch); the batch signs
  // each with prepare() as it takes it.
  void send_batch(http::Batch& batch, std::size_t max_parallel) {
    transport_.send_batch(batch, max_parallel);
  }

  const ClientSettings& settings() const { return settings_; }

 private:
  ClientSettings settings_;
  http::Transport& transport_;
  Clock clock_;
};

// An Error from a non-2xx response: S3 XML (<Error><Code>…), IAM/Tigris JSON ({"Code",
// "Message"}), or a bare status (HEAD has no body).
Error error_from_response(const http::Response& response, std::string_view operation);
// An Error from a failed transfer (exit 5, or 130 when cancelled).
Error error_from_transport(const http::TransportError& error, std::string_view operation);
// Either of the above for a result that is not a 2xx response; nullopt for 2xx.
std::optional<Error> error_from_result(const http::Result& result, std::string_view operation);
// The 2xx response, or throws TforkError with the error above. A temporary result gives its
// response by value, so `expect_success(client.send(op), ...)` never dangles.
const http::Response& expect_success(const http::Result& result, std::string_view operation);
http::Response expect_success(http::Result&& result, std::string_view operation);

}  // namespace tfork::tigris
