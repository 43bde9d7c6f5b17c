// SPDX-License-Identifier: Apache-2.0
#include "tfork/tigris/client.hpp"

#include "tfork/crypto/hash.hpp"
#include "tfork/version.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>

#include <cctype>
#include <memory>

namespace tfork::tigris {
namespace {

struct Url {
  std::string scheme;     // "https"
  std::string authority;  // "t3.storage.dev" or "127.0.0.1:9000"
  std::string base_path;  // "" or "/prefix"
};

Url split_url(std::string_view url) {
  Url parts;
  const auto scheme_end = url.find("://");
  parts.scheme = std::string(url.substr(0, scheme_end));
  auto rest = url.substr(scheme_end + 3);
  const auto slash = rest.find('/');
  parts.authority = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) parts.base_path = std::string(rest.substr(slash));
  while (!parts.base_path.empty() && parts.base_path.back() == '/')
    parts.base_path.pop_back();
  return parts;
}

// The Host header leaves out the scheme's default port, as every HTTP client does.
std::string host_header(const Url& url) {
  auto host = url.authority;
  if (url.scheme == "https" && host.ends_with(":443")) host.resize(host.size() - 4);
  if (url.scheme == "http" && host.ends_with(":80")) host.resize(host.size() - 3);
  return host;
}

std::string encode_query(const std::vector<std::pair<std::string, std::string>>& query) {
  std::string out;
  for (const auto& [name, value] : query) {
    if (!out.empty()) out += '&';
    out += sigv4::uri_encode(name, false);
    out += '=';
    out += sigv4::uri_encode(value, false);
  }
  return out;
}

// The signed wire request for `operation` at `when`.
http::Request prepare_at(const ClientSettings& settings, const Operation& operation,
                         sigv4::Clock::time_point when) {
  const bool iam = operation.api == Api::iam;
  auto url = split_url(iam ? settings.iam_endpoint : settings.endpoint);

  std::string path = url.base_path;
  if (!operation.bucket.empty()) {
    // A dotted name as a host label breaks TLS on *.t3.storage.dev (the wildcard covers one
    // label), so dotted names are always addressed path-style (cli.md §3, issue 7 §5).
    const bool virtual_hosted = !iam && !settings.path_style && !operation.path_style &&
                                operation.bucket.find('.') == std::string::npos;
    if (virtual_hosted) {
      url.authority = operation.bucket + "." + url.authority;
    } else {
      path += "/" + sigv4::uri_encode(operation.bucket, false);
    }
  }
  if (!operation.key.empty()) path += "/" + sigv4::uri_encode(operation.key, true);
  if (path.empty()) path = "/";
  const auto query = encode_query(operation.query);

  sigv4::Request to_sign;
  to_sign.method = operation.method;
  to_sign.path = path;
  to_sign.query = query;
  to_sign.headers = operation.headers;
  to_sign.headers.emplace_back("host", host_header(url));
  to_sign.payload_hash = crypto::sha256_hex(operation.body);

  sigv4::SigningParams params;
  // Tigris IAM is signed with region auto whatever the S3 region (tigris-wire.md §1.2).
  params.region = iam ? "auto" : settings.region;
  params.service = "s3";  // Tigris signs IAM with service s3 too (tigris-wire.md §1.2)
  const auto added = sigv4::sign(to_sign, settings.credentials, params, when);

  http::Request request;
  request.method = operation.method;
  request.url = url.scheme + "://" + url.authority + path + (query.empty() ? "" : "?" + query);
  request.headers = std::move(to_sign.headers);
  request.headers.insert(request.headers.end(), added.begin(), added.end());
  request.headers.emplace_back("user-agent", std::string("tfork/") + k_version);
  request.body = operation.body;
  request.resend_if_unanswered = operation.resend_if_unanswered;
  return request;
}

}  // namespace

Client::Client(ClientSettings settings, http::Transport& transport, Clock clock)
    : settings_(std::move(settings)), transport_(transport), clock_(std::move(clock)) {
  if (!clock_) clock_ = [] { return sigv4::Clock::now(); };
}

http::Request Client::prepare(const Operation& operation) const {
  auto request = prepare_at(settings_, operation, clock_());
  // A retry is signed again when it goes out (issue 7 §5).
  request.resign = [settings = settings_, clock = clock_,
                    operation = std::make_shared<const Operation>(operation)] {
    return prepare_at(settings, *operation, clock());
  };
  return request;
}

http::Result Client::send(const Operation& operation) {
  return transport_.send(prepare(operation));
}

std::vector<http::Result> Client::send_all(
    std::span<const Operation> operations, std::size_t max_parallel,
    const std::function<void(std::size_t, const http::Result&)>& on_done) {
  std::vector<http::Request> requests;
  requests.reserve(operations.size());
  for (const auto& operation : operations)
    requests.push_back(prepare(operation));
  return transport_.send_all(requests, max_parallel, on_done);
}

Error error_from_response(const http::Response& response, std::string_view operation) {
  Error error;
  error.http_status = response.status;
  if (auto id = response.header("x-amz-request-id")) error.request_id = std::string(*id);

  const auto& body = response.body;
  const auto start = body.find_first_not_of(" \t\r\n");
  if (start != std::string::npos && body[start] == '<') {
    pugi::xml_document doc;
    if (doc.load_buffer(body.data(), body.size())) {
      auto node = doc.child("Error");
      if (!node) node = doc.first_child().child("Error");  // IAM's ErrorResponse wrapper
      error.code = node.child_value("Code");
      error.message = node.child_value("Message");
      if (error.request_id.empty()) error.request_id = node.child_value("RequestId");
      if (error.request_id.empty()) error.request_id = doc.first_child().child_value("RequestId");
    }
  } else if (start != std::string::npos && body[start] == '{') {
    const auto doc = nlohmann::json::parse(body, nullptr, false);
    if (doc.is_object()) {
      auto text = [&](const char* a, const char* b) -> std::string {
        for (const char* name : {a, b})
          if (doc.contains(name) && doc[name].is_string()) return doc[name].get<std::string>();
        return {};
      };
      error.code = text("Code", "code");
      error.message = text("Message", "message");
      if (error.request_id.empty()) error.request_id = text("RequestId", "request_id");
    }
  }
  // Some gateways answer only {"Message": "<Code>: <text>"}: the code is the message's head.
  if (error.code.empty()) {
    const auto colon = error.message.find(": ");
    const std::string_view head = std::string_view(error.message).substr(0, colon);
    if (colon != std::string::npos && colon > 0 && colon <= 64 &&
        std::isupper(static_cast<unsigned char>(head.front())) &&
        std::ranges::all_of(head,
                            [](char c) { return std::isalnum(static_cast<unsigned char>(c)); })) {
      error.code = std::string(head);
      error.message = error.message.substr(colon + 2);
    }
  }
  // Tigris IAM says a key is gone with a 404 or with NoSuchEntity anywhere in the body, XML,
  // JSON or text (tigris-wire §1.5).
  if (error.code.empty() && body.find("NoSuchEntity") != std::string::npos) {
    error.code = "NoSuchEntity";
  }

  if (error.code.empty()) {
    switch (response.status) {
      case 400:
        error.code = "BadRequest";
        break;
      case 403:
        error.code = "AccessDenied";
        break;
      case 404:
        error.code = "NotFound";
        break;
      case 409:
        error.code = "Conflict";
        break;
      case 429:
        error.code = "TooManyRequests";
        break;
      case 503:
        error.code = "ServiceUnavailable";
        break;
      default:
        error.code = fmt::format("Http{}", response.status);
    }
  }
  if (error.message.empty()) {
    error.message = fmt::format("{} failed: HTTP {}", operation, response.status);
  } else {
    error.message = fmt::format("{} failed: {}", operation, error.message);
  }
  error.kind = kind_for_service_error(error.code, response.status);
  return error;
}

Error error_from_transport(const http::TransportError& failure, std::string_view operation) {
  Error error;
  error.kind = failure.kind == http::TransportError::Kind::cancelled ? ErrorKind::interrupted
                                                                     : ErrorKind::network;
  switch (failure.kind) {
    case http::TransportError::Kind::dns:
      error.code = "DnsError";
      break;
    case http::TransportError::Kind::connect:
      error.code = "ConnectError";
      break;
    case http::TransportError::Kind::tls:
      error.code = "TlsError";
      break;
    case http::TransportError::Kind::timeout:
      error.code = "Timeout";
      break;
    case http::TransportError::Kind::cancelled:
      error.code = "Interrupted";
      break;
    case http::TransportError::Kind::other:
      error.code = "NetworkError";
      break;
  }
  error.message = fmt::format("{} failed: {}", operation, failure.message);
  return error;
}

std::optional<Error> error_from_result(const http::Result& result, std::string_view operation) {
  if (!result) return error_from_transport(result.error(), operation);
  if (result->status >= 200 && result->status < 300) return std::nullopt;
  return error_from_response(*result, operation);
}

const http::Response& expect_success(const http::Result& result, std::string_view operation) {
  if (auto error = error_from_result(result, operation)) throw TforkError(std::move(*error));
  return *result;
}

http::Response expect_success(http::Result&& result, std::string_view operation) {
  if (auto error = error_from_result(result, operation)) throw TforkError(std::move(*error));
  return std::move(*result);
}

}  // namespace tfork::tigris
