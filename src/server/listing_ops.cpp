// SPDX-License-Identifier: Apache-2.0
// ListObjectsV2 and ListObjects v1 over the store's merged listing (server-design §5.5, §6.5).
#include "tfork/crypto/hash.hpp"
#include "tfork/server/listing.hpp"
#include "tfork/server/operations.hpp"
#include "tfork/server/time_format.hpp"
#include "tfork/server/xml_render.hpp"

#include <pugixml.hpp>

namespace tfork::server {
namespace {

constexpr char k_token_version = '\x01';

int max_keys(const Call& call) {
  const auto* text = call.target.get("max-keys");
  if (!text) return 1000;
  const auto value = parse_seq(*text);
  if (!value)
    fail(Err::invalid_argument, "Provided max-keys not an integer or within integer range");
  // S3 caps max-keys at 1000 rather than rejecting larger values.
  return static_cast<int>(std::min<store::Seq>(*value, 1000));
}

}  // namespace

std::string encode_list_token(std::string_view last, bool is_prefix) {
  std::string raw;
  raw.push_back(k_token_version);
  raw.push_back(is_prefix ? 'p' : 'k');
  raw.append(last);
  auto text = crypto::base64_encode(raw);
  for (auto& c : text) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  while (!text.empty() && text.back() == '=')
    text.pop_back();
  return text;
}

std::optional<ListToken> decode_list_token(std::string_view token) {
  std::string text(token);
  for (auto& c : text) {
    if (c == '-')
      c = '+';
    else if (c == '_')
      c = '/';
    else if (c == '+' || c == '/' || c == '=')
      return std::nullopt;
  }
  while (text.size() % 4 != 0)
    text.push_back('=');
  const auto raw = crypto::base64_decode(text);
  if (!raw || raw->size() < 2 || (*raw)[0] != k_token_version) return std::nullopt;
  if ((*raw)[1] != 'k' && (*raw)[1] != 'p') return std::nullopt;
  return ListToken{raw->substr(2), (*raw)[1] == 'p'};
}

Response list_objects(Call& call, int version) {
  const auto& bucket = call.target.bucket;
  require(call, bucket, Access::read);
  const auto param = [&](std::string_view name) { return call.target.get(name); };

  ListResult result;
  result.version = version;
  result.bucket = bucket;
  result.owner_id = "tfork";
  if (const auto* value = param("prefix")) result.prefix = *value;
  if (const auto* value = param("delimiter")) result.delimiter = *value;
  if (const auto* value = param("encoding-type")) {
    if (*value != "url")
      fail(Err::invalid_argument, "Invalid Encoding Method specified in Request");
    result.url_encoding = true;
  }
  result.max_keys = max_keys(call);

  store::ListQuery query;
  query.prefix = result.prefix;
  query.delimiter = result.delimiter;
  query.max_keys = result.max_keys;
  query.at = snapshot_version(call);

  if (version == 2) {
    if (const auto* value = param("fetch-owner")) result.fetch_owner = *value == "true";
    if (const auto* value = param("start-after")) {
      result.start_after = *value;
      query.after = *value;
    }
    if (const auto* token = param("continuation-token")) {
      // An empty token is echoed and lists from the start, as if absent (Ceph's s3-tests,
      // test_bucket_listv2_continuationtoken_empty).
      result.continuation_token = *token;
      if (!token->empty()) {
        const auto decoded = decode_list_token(*token);
        if (!decoded) fail(Err::invalid_token);
        query.after = decoded->last;
        query.after_is_prefix = decoded->is_prefix;
      }
    }
  } else if (const auto* marker = param("marker")) {
    result.marker = *marker;
    query.after = *marker;
    // A v1 marker may be a NextMarker that was a common prefix: every key under it would roll
    // up into that same prefix, which is not after the marker, so skip the whole subtree.
    query.after_is_prefix = query.names_common_prefix(*marker);
  }

  if (result.max_keys == 0) {
    check(call.store.head_bucket(bucket), bucket);  // still 404 for a missing bucket
  } else {
    result.page = check(call.store.list_objects(bucket, query), bucket);
  }
  if (result.page.truncated) {
    if (version == 2) {
      result.next_continuation_token =
          encode_list_token(result.page.last, result.page.last_is_prefix);
    } else {
      result.next_marker = result.page.last;
    }
  }
  return xml_response(200, render_list_objects(result));
}

// ListObjectVersions (GET /<b>?versions): the visible version of each key. A regular bucket
// keeps one version per key, answered with VersionId "null" as S3 does for unversioned
// buckets; a snapshot-enabled bucket answers each object's version id (its seq), which
// GetObject/HeadObject take as versionId. Older versions and delete markers are not listed
// (Tigris answers them only for snapshot buckets; test harnesses use this to empty a bucket).
Response list_object_versions(Call& call) {
  const auto& bucket = call.target.bucket;
  require(call, bucket, Access::read);
  const auto info = check(call.store.head_bucket(bucket), bucket);
  const auto param = [&](std::string_view name) { return call.target.get(name); };
  store::ListQuery query;
  if (const auto* value = param("prefix")) query.prefix = *value;
  if (const auto* value = param("delimiter")) query.delimiter = *value;
  if (const auto* value = param("key-marker")) query.after = *value;
  bool url = false;
  if (const auto* value = param("encoding-type")) {
    if (*value != "url")
      fail(Err::invalid_argument, "Invalid Encoding Method specified in Request");
    url = true;
  }
  query.max_keys = max_keys(call);
  query.at = snapshot_version(call);
  store::ListPage page;
  if (query.max_keys > 0) page = check(call.store.list_objects(bucket, query), bucket);
  const auto encode = [&](std::string_view key) {
    return url ? url_encode_key(key) : std::string(key);
  };

  pugi::xml_document document;
  auto root = s3_root(document, "ListVersionsResult");
  add_text(root, "Name", bucket);
  add_text(root, "Prefix", encode(query.prefix));
  add_text(root, "KeyMarker", encode(query.after));
  add_text(root, "VersionIdMarker", param("version-id-marker") ? *param("version-id-marker") : "");
  add_text(root, "MaxKeys", std::to_string(query.max_keys));
  if (!query.delimiter.empty()) add_text(root, "Delimiter", encode(query.delimiter));
  if (url) add_text(root, "EncodingType", "url");
  add_text(root, "IsTruncated", page.truncated ? "true" : "false");
  if (page.truncated) {
    add_text(root, "NextKeyMarker", encode(page.last));
    add_text(root, "NextVersionIdMarker", "null");
  }
  for (const auto& object : page.objects) {
    auto version = root.append_child("Version");
    add_text(version, "Key", encode(object.key));
    add_text(version, "VersionId", info.snapshot_enabled ? std::to_string(object.seq) : "null");
    add_text(version, "IsLatest", "true");
    add_text(version, "LastModified", iso8601_ms(object.seq));
    add_text(version, "ETag", quote_etag(object.etag));
    add_text(version, "Size", std::to_string(object.size));
    add_text(version, "StorageClass", "STANDARD");
    auto owner = version.append_child("Owner");
    add_text(owner, "ID", "tfork");
    add_text(owner, "DisplayName", "tfork");
  }
  for (const auto& prefix : page.common_prefixes) {
    add_text(root.append_child("CommonPrefixes"), "Prefix", encode(prefix));
  }
  return xml_response(200, to_string(document));
}

}  // namespace tfork::server
