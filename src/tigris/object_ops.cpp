// SPDX-License-Identifier: Apache-2.0
#include "tfork/tigris/object_ops.hpp"

#include "tfork/output/render.hpp"
#include "tfork/sigv4/signer.hpp"

#include <fmt/format.h>
#include <pugixml.hpp>

#include <charconv>

namespace tfork::tigris {
namespace {

constexpr std::size_t k_max_key_bytes = 1024;  // S3's limit on a key's UTF-8 bytes

std::string header_text(const http::Response& response, std::string_view name) {
  const auto value = response.header(name);
  return value ? std::string(*value) : std::string();
}

std::string unquoted(std::string text) {
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"')
    text = text.substr(1, text.size() - 2);
  return text;
}

// The total of "bytes 0-99/1234" (RFC 9110 §14.4); nullopt for "*" or a malformed value.
std::optional<std::int64_t> content_range_total(std::string_view value) {
  const auto slash = value.rfind('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const auto total = value.substr(slash + 1);
  std::int64_t size = 0;
  const auto [end, error] = std::from_chars(total.data(), total.data() + total.size(), size);
  if (error != std::errc{} || end != total.data() + total.size()) return std::nullopt;
  return size;
}

}  // namespace

std::optional<std::string> object_key_problem(std::string_view key) {
  if (key.empty()) return "must not be empty";
  if (key.size() > k_max_key_bytes) return "must be at most 1024 bytes";
  // output::printable changes exactly the control characters and the bytes that are not
  // UTF-8: a key it leaves alone has neither.
  if (output::printable(key) != key)
    return "must be UTF-8 without control characters (got '" + output::printable(key) + "')";
  std::size_t start = 0;
  while (start <= key.size()) {
    const auto end = std::min(key.find('/', start), key.size());
    const auto segment = key.substr(start, end - start);
    if (segment == "." || segment == "..")
      return "must not have a '" + std::string(segment) + "' path segment";
    start = end + 1;
  }
  return std::nullopt;
}

Operation get_object(std::string_view bucket, std::string_view key, std::int64_t first_bytes) {
  Operation op{
      .name = "GetObject", .method = "GET", .bucket = std::string(bucket), .key = std::string(key)};
  if (first_bytes > 0)
    op.headers.emplace_back("Range", "bytes=0-" + std::to_string(first_bytes - 1));
  return op;
}

Operation put_object(std::string_view bucket, std::string_view key, std::string body,
                     std::string_view content_type) {
  Operation op{
      .name = "PutObject", .method = "PUT", .bucket = std::string(bucket), .key = std::string(key)};
  if (!content_type.empty()) op.headers.emplace_back("Content-Type", std::string(content_type));
  op.body = std::move(body);
  return op;
}

Operation delete_object(std::string_view bucket, std::string_view key) {
  return Operation{.name = "DeleteObject",
                   .method = "DELETE",
                   .bucket = std::string(bucket),
                   .key = std::string(key)};
}

Operation copy_object(std::string_view bucket, std::string_view key, std::string_view source_bucket,
                      std::string_view source_key) {
  Operation op{.name = "CopyObject",
               .method = "PUT",
               .bucket = std::string(bucket),
               .key = std::string(key)};
  // The source travels URL-encoded (S3 CopyObject, x-amz-copy-source): a key with '?', '%' or
  // a space would otherwise name another object.
  std::string source = fmt::format("/{}/{}", source_bucket, sigv4::uri_encode(source_key, true));
  op.headers.emplace_back("x-amz-copy-source", std::move(source));
  return op;
}

std::string parse_copy_etag(const http::Response& response) {
  pugi::xml_document document;
  if (!document.load_buffer(response.body.data(), response.body.size())) return {};
  return unquoted(document.child("CopyObjectResult").child_value("ETag"));
}

ObjectRead parse_object_read(const http::Response& response) {
  ObjectRead read;
  read.size = static_cast<std::int64_t>(response.body.size());
  if (response.status == 206) {
    if (const auto total = content_range_total(header_text(response, "content-range")))
      read.size = *total;
  }
  read.content_type = header_text(response, "content-type");
  read.etag = unquoted(header_text(response, "etag"));
  return read;
}

std::string presigned_url(const Client& client, std::string_view method, std::string_view bucket,
                          std::string_view key, std::chrono::seconds expires,
                          sigv4::Clock::time_point now) {
  // The client's own addressing (endpoint, path or virtual-hosted style, Host header) decides
  // the URL; only its signature is replaced by a query signature.
  const Operation op{.name = "Presign",
                     .method = std::string(method),
                     .bucket = std::string(bucket),
                     .key = std::string(key)};
  const auto prepared = client.prepare(op);
  const auto scheme_end = prepared.url.find("://");
  const auto path_start = prepared.url.find('/', scheme_end + 3);
  const auto origin = prepared.url.substr(0, path_start);
  auto path = prepared.url.substr(path_start);
  if (const auto query = path.find('?'); query != std::string::npos) path.resize(query);

  sigv4::Request request;
  request.method = std::string(method);
  request.path = path;
  request.headers.emplace_back(
      "host", std::string(http::find_header(prepared.headers, "host").value_or("")));
  sigv4::SigningParams params;
  params.region = client.settings().region;
  const auto query = sigv4::presign(request, client.settings().credentials, params, now, expires);
  return origin + path + "?" + query;
}

}  // namespace tfork::tigris
