// SPDX-License-Identifier: Apache-2.0
#pragma once
// A real Store in a temporary directory, the pure Handler over it, and a tiny SigV4 client
// built on tfork::sigv4 (so the tests sign exactly as the CLI does).

#include "tfork/crypto/hash.hpp"
#include "tfork/server/handler.hpp"
#include "tfork/sigv4/signer.hpp"
#include "tfork/store/store.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// Tests describe requests with designated initializers and leave the rest defaulted; g++ 12
// warns about that under -Wextra although every member has a default.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace tfork::server::test {

using Clock = std::chrono::system_clock;

inline constexpr const char* k_root_key = "tid_ROOTKEYFORTESTS";
inline constexpr const char* k_root_secret = "tsec_rootsecretfortests";

struct Credentials {
  std::string id;
  std::string secret;
};

struct Send {
  std::string method = "GET";
  std::string target = "/";
  std::string body;
  std::vector<Header> headers;
  // x-amz-content-sha256 to sign; empty: the hex SHA-256 of the body.
  std::string payload_hash;
  bool omit_content_sha256 = false;  // sign without x-amz-content-sha256 (curl 7.88 style)
  std::string service = "s3";
  std::optional<Clock::time_point> time;  // signing time; default: the server's clock
  std::optional<Credentials> as;          // default: root
};

class Server {
 public:
  explicit Server(VarianceOptions variance = {}) {
    dir_ = std::filesystem::temp_directory_path() / ("tfork-server-test-" + crypto::random_hex(8));
    auto opened = store::Store::open(dir_);
    REQUIRE(opened.has_value());
    store_ = std::move(*opened);
    now_ = std::chrono::floor<std::chrono::seconds>(Clock::now());
    handler_ = std::make_unique<Handler>(
        *store_,
        HandlerOptions{k_root_key, k_root_secret, [this] { return now_; }, std::move(variance)});
  }
  ~Server() {
    handler_.reset();
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  store::Store& store() { return *store_; }
  Handler& handler() { return *handler_; }
  Clock::time_point now() const { return now_; }
  void advance(std::chrono::milliseconds by) { now_ += by; }  // the server's clock moves on

  // A request signed with SigV4 headers (x-amz-date, x-amz-content-sha256, authorization).
  Request sign(const Send& send) const {
    const auto question = send.target.find('?');
    sigv4::Request wire;
    wire.method = send.method;
    wire.path = send.target.substr(0, question);
    wire.query = question == std::string::npos ? "" : send.target.substr(question + 1);
    wire.headers = send.headers;
    wire.headers.emplace_back("host", "127.0.0.1:9000");
    wire.payload_hash =
        send.payload_hash.empty() ? crypto::sha256_hex(send.body) : send.payload_hash;
    sigv4::SigningParams params;
    params.service = send.service;
    params.add_content_sha256 = !send.omit_content_sha256;
    const auto credentials = send.as.value_or(Credentials{k_root_key, k_root_secret});
    const auto added = sigv4::sign(wire, {credentials.id, credentials.secret, {}}, params,
                                   send.time.value_or(now_));
    Request request;
    request.method = send.method;
    request.target = send.target;
    request.headers = wire.headers;
    request.headers.insert(request.headers.end(), added.begin(), added.end());
    request.body = send.body;
    return request;
  }

  Response send(const Send& send) { return handler_->handle(sign(send)); }

  // Shorthands.
  Response get(const std::string& target, std::vector<Header> headers = {},
               std::optional<Credentials> as = std::nullopt) {
    return send({.method = "GET", .target = target, .headers = std::move(headers), .as = as});
  }
  Response put(const std::string& target, const std::string& body = "",
               std::vector<Header> headers = {}, std::optional<Credentials> as = std::nullopt) {
    return send(
        {.method = "PUT", .target = target, .body = body, .headers = std::move(headers), .as = as});
  }
  Response del(const std::string& target, std::vector<Header> headers = {},
               std::optional<Credentials> as = std::nullopt) {
    return send({.method = "DELETE", .target = target, .headers = std::move(headers), .as = as});
  }
  Response head(const std::string& target, std::vector<Header> headers = {},
                std::optional<Credentials> as = std::nullopt) {
    return send({.method = "HEAD", .target = target, .headers = std::move(headers), .as = as});
  }
  Response post(const std::string& target, const std::string& body,
                std::vector<Header> headers = {}, std::optional<Credentials> as = std::nullopt) {
    return send({.method = "POST",
                 .target = target,
                 .body = body,
                 .headers = std::move(headers),
                 .as = as});
  }

  // The object body of a GET, read from the blob files the response streams.
  static std::string body_of(const Response& response);

  // Mints a key through the IAM action; returns its credentials.
  Credentials create_key(const std::string& name, const std::string& roles_json,
                         std::optional<Credentials> as = std::nullopt);

 private:
  std::filesystem::path dir_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<Handler> handler_;
  Clock::time_point now_;
};

// The text of <tag>…</tag> in an XML or the empty string.
std::string xml_value(const std::string& xml, const std::string& tag);
bool contains(const std::string& haystack, const std::string& needle);

}  // namespace tfork::server::test
