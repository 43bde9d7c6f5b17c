// SPDX-License-Identifier: Apache-2.0
#pragma once
// The pure handler's view of HTTP (style.md #8): a request as received and a response to
// send. The socket layer (http_server.cpp) converts libmicrohttpd's requests to and from these,
// so tests drive the handler without a socket.

#include "tfork/core/ascii.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfork::server {

using Header = std::pair<std::string, std::string>;

// Case-insensitive ASCII comparison of header names (the one in tfork/core/ascii.hpp).
using ascii::iequals;

// The first header called `name` (any case), or nullptr.
const std::string* find_header(const std::vector<Header>& headers, std::string_view name);

struct Request {
  std::string method;           // "GET", "HEAD", ...
  std::string target;           // raw request target, e.g. "/b/a%2Fb?list-type=2"
  std::vector<Header> headers;  // as received (names in any case)
  std::string body;             // after HTTP framing (chunked transfer coding) is removed

  const std::string* header(std::string_view name) const { return find_header(headers, name); }
  std::string header_or(std::string_view name, std::string_view fallback = {}) const;
  // Every value of `name` joined with `separator`, as S3 keeps a header sent more than once
  // ("deflate" and "gzip" -> "deflate, gzip"); nullopt when there is none.
  std::optional<std::string> joined_header(std::string_view name,
                                           std::string_view separator = ", ") const;
};

// An open blob file: a reader keeps it open from the moment it resolved the object until the
// response is sent, so an overwrite that unlinks the blob cannot cut the body short.
class OpenFile {
 public:
  explicit OpenFile(int fd) : fd_(fd) {}
  ~OpenFile();
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// A byte range of an immutable blob, streamed as (part of) a response body: of a blob file,
// or of a small blob's bytes (store::k_max_db_blob) when `bytes` is set.
struct BodySegment {
  std::filesystem::path path;
  std::int64_t offset = 0;
  std::int64_t length = 0;
  std::shared_ptr<const OpenFile> file;        // opened by the handler; else opened when sent
  std::shared_ptr<const std::string> bytes{};  // the whole blob, kept in memory
};

struct Response {
  int status = 200;
  std::vector<Header> headers;
  std::string body;
  // Object bodies are streamed from blobs: when set, `body` is empty and these are sent in
  // order. `content_length` is their total (or, for HEAD, the length a GET would send).
  std::vector<BodySegment> blob_body;
  std::optional<std::int64_t> content_length;

  const std::string* header(std::string_view name) const { return find_header(headers, name); }
  void set_header(std::string name, std::string value);  // replaces any of that name
  std::int64_t body_length() const {
    return content_length ? *content_length : static_cast<std::int64_t>(body.size());
  }
};

}  // namespace tfork::server
