// SPDX-License-Identifier: Apache-2.0
#include "tfork/tigris/objects.hpp"

#include <pugixml.hpp>

#include <charconv>

namespace tfork::tigris {
namespace {

// encoding-type=url values: S3 writes a space as '+' and everything else as %XY.
std::string url_decode(std::string_view text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out.push_back(' ');
    } else if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 &&
               hex(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

std::string unquote(std::string text) {
  if (text.size() >= 2 && text.front() == '"' && text.back() == '"')
    text = text.substr(1, text.size() - 2);
  return text;
}

}  // namespace

Operation list_objects_v2(const ListObjectsRequest& request) {
  Operation op{.name = "ListObjectsV2", .method = "GET", .bucket = request.bucket};
  op.query.emplace_back("list-type", "2");
  op.query.emplace_back("encoding-type", "url");
  op.query.emplace_back("max-keys", std::to_string(request.max_keys));
  if (!request.prefix.empty()) op.query.emplace_back("prefix", request.prefix);
  if (!request.delimiter.empty()) op.query.emplace_back("delimiter", request.delimiter);
  if (!request.start_after.empty() && request.continuation_token.empty())
    op.query.emplace_back("start-after", request.start_after);
  if (!request.continuation_token.empty())
    op.query.emplace_back("continuation-token", request.continuation_token);
  if (!request.snapshot_version.empty())
    op.headers.emplace_back("X-Tigris-Snapshot-Version", request.snapshot_version);
  return op;
}

std::expected<ObjectPage, std::string> parse_object_list(const http::Response& response) {
  pugi::xml_document document;
  if (!document.load_buffer(response.body.data(), response.body.size()))
    return std::unexpected("the listing is not XML");
  const auto root = document.child("ListBucketResult");
  if (!root) return std::unexpected("the listing has no ListBucketResult");
  const bool encoded = std::string_view(root.child_value("EncodingType")) == "url";
  ObjectPage page;
  for (auto node = root.child("Contents"); node; node = node.next_sibling("Contents")) {
    ObjectEntry entry;
    entry.key = encoded ? url_decode(node.child_value("Key")) : node.child_value("Key");
    const std::string_view size = node.child_value("Size");
    if (std::from_chars(size.data(), size.data() + size.size(), entry.size).ec != std::errc{})
      return std::unexpected("an entry of the listing has no size");
    entry.etag = unquote(node.child_value("ETag"));
    entry.last_modified = node.child_value("LastModified");
    page.objects.push_back(std::move(entry));
  }
  for (auto node = root.child("CommonPrefixes"); node; node = node.next_sibling("CommonPrefixes")) {
    const std::string prefix = node.child_value("Prefix");
    page.common_prefixes.push_back(encoded ? url_decode(prefix) : prefix);
  }
  const bool truncated = std::string_view(root.child_value("IsTruncated")) == "true";
  page.next_token = root.child_value("NextContinuationToken");
  if (truncated && page.next_token.empty())
    return std::unexpected("a truncated listing without NextContinuationToken");
  if (!truncated) page.next_token.clear();
  return page;
}

}  // namespace tfork::tigris
