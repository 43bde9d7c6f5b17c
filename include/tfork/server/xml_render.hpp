// SPDX-License-Identifier: Apache-2.0
#pragma once
// S3 XML documents (server-design.md §5.4–5.6), rendered with pugixml. Renderers take plain
// data and return the document text with an XML declaration.

#include "tfork/server/errors.hpp"
#include "tfork/store/store.hpp"

#include <pugixml.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::server {

inline constexpr const char* k_s3_namespace = "http://s3.amazonaws.com/doc/2006-03-01/";

// An ETag as S3 sends it, in double quotes (server-design §5.4).
std::string quote_etag(std::string_view etag);

// Appends <name>value</name> to `parent`.
pugi::xml_node add_text(pugi::xml_node parent, const char* name, std::string_view value);
// A new document whose root element carries the S3 namespace.
pugi::xml_node s3_root(pugi::xml_document& document, const char* name);
std::string to_string(const pugi::xml_document& document);

// <Error><Code/><Message/>[<BucketName/>][<Key/>]<Resource/><RequestId/></Error>
std::string render_error(const S3Error& error, std::string_view resource,
                         std::string_view request_id);

// ListObjectsV2 (version 2) and ListObjects (version 1) results.
struct ListResult {
  int version = 2;
  std::string bucket;
  std::string prefix;
  std::string delimiter;
  int max_keys = 1000;
  bool url_encoding = false;  // encoding-type=url: encode keys/prefixes and echo EncodingType
  bool fetch_owner = false;   // v2 fetch-owner (v1 always lists owners)
  std::string owner_id;
  // v2
  std::optional<std::string> continuation_token;
  std::optional<std::string> next_continuation_token;
  std::optional<std::string> start_after;
  // v1
  std::string marker;
  std::optional<std::string> next_marker;
  store::ListPage page;
};
std::string render_list_objects(const ListResult& result);

// The encoding applied by encoding-type=url: each byte outside the RFC 3986 unreserved set
// and '/' is percent-encoded (so '+' and '%' survive botocore's unquote_plus, §5.5).
std::string url_encode_key(std::string_view key);

}  // namespace tfork::server
