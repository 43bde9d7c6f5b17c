// SPDX-License-Identifier: Apache-2.0
// Object operations (server-design §5.4, §5.6, §6.4, §6.6; tigris-wire §2.9 snapshot reads).
#include "tfork/crypto/hash.hpp"
#include "tfork/server/object_support.hpp"
#include "tfork/server/operations.hpp"
#include "tfork/server/time_format.hpp"
#include "tfork/server/xml_render.hpp"

#include <pugixml.hpp>

#include <algorithm>
#include <fcntl.h>
#include <memory>
#include <ranges>

namespace tfork::server {
namespace {

std::string_view unquote(std::string_view etag) {
  while (!etag.empty() && etag.front() == ' ')
    etag.remove_prefix(1);
  while (!etag.empty() && etag.back() == ' ')
    etag.remove_suffix(1);
  if (etag.starts_with("W/")) etag.remove_prefix(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return etag;
}

// If-Match / If-None-Match lists: "*" or comma-separated (quoted) etags.
bool etag_matches(std::string_view list, std::string_view etag) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    const auto item = unquote(list.substr(0, comma));
    if (item == "*" || item == etag) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

// Conditional requests (RFC 9110 §13.2.2 order). Returns a 304 response or throws 412.
std::optional<Response> evaluate_conditions(const Call& call, const store::ObjectInfo& info) {
  const auto modified = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(info.seq)));
  const auto modified_s = std::chrono::floor<std::chrono::seconds>(modified);
  if (const auto* if_match = call.header("if-match")) {
    if (!etag_matches(*if_match, info.etag)) fail(Err::precondition_failed);
  } else if (const auto* since = call.header("if-unmodified-since")) {
    if (auto time = parse_http_date(*since); time && modified_s > *time) {
      fail(Err::precondition_failed);
    }
  }
  bool not_modified = false;
  if (const auto* if_none_match = call.header("if-none-match")) {
    not_modified = etag_matches(*if_none_match, info.etag);
  } else if (const auto* since = call.header("if-modified-since")) {
    if (auto time = parse_http_date(*since); time && modified_s <= *time) not_modified = true;
  }
  if (!not_modified) return std::nullopt;
  Response response;
  response.status = 304;
  response.set_header("ETag", quote_etag(info.etag));
  response.set_header("Last-Modified", http_date(info.seq));
  return response;
}

// A version id as sent (nullptr: none): "null" (S3's id of an unversioned object) and empty
// are none; else a seq. The store resolves "newest at or before" a seq, so a version id that
// resolves to a different version does not exist.
std::optional<store::Seq> parse_version_id(const std::string* text) {
  if (!text || text->empty() || *text == "null") return std::nullopt;
  const auto seq = parse_seq(*text);
  if (!seq) fail(Err::invalid_argument, "Invalid version id specified");
  return seq;
}

std::optional<store::Seq> version_id(const Call& call, std::string_view name = "versionId") {
  return parse_version_id(call.target.get(name));
}

// DeleteObject's one road, taken by DeleteObject and by each key of DeleteObjects: `version`
// is the versionId as sent (nullptr when none). Throws the key's S3 error.
void delete_one(const Call& call, const std::string& key, const std::string* version) {
  const auto& bucket = call.target.bucket;
  if (key.size() > k_max_key_bytes) fail(Err::key_too_long);
  if (parse_version_id(version)) {
    // tigris-wire §4: versionId deletes inside forks have unconfirmed semantics.
    fail(Err::not_implemented, "Deleting a specific version is not supported by tfork serve.");
  }
  check(call.store.delete_object(bucket, key), bucket, key);
}

// ?partNumber= of GetObject and HeadObject: 1..10000.
std::optional<int> part_number(const Call& call) {
  const auto* text = call.target.get("partNumber");
  if (!text) return std::nullopt;
  const auto value = parse_seq(*text);
  if (!value || *value < 1 || *value > 10000)
    fail(Err::invalid_argument, "Part number must be an integer between 1 and 10000, inclusive");
  return static_cast<int>(*value);
}

// The number of parts of a multipart object (its ETag ends in "-<parts>"), else nullopt.
std::optional<int> parts_count(const store::ObjectInfo& info) {
  if (info.etag.find('-') == std::string::npos || info.parts.empty()) return std::nullopt;
  return static_cast<int>(info.parts.size());
}

void remove_checksum_headers(Response& response) {
  std::erase_if(response.headers, [](const Header& header) {
    return std::string_view(header.first).starts_with("x-amz-checksum-");
  });
}

// A multipart object's checksum is a checksum of its parts' checksums, "<base64>-<parts>".
std::string_view checksum_type(std::string_view value) {
  return value.find('-') == std::string_view::npos ? "FULL_OBJECT" : "COMPOSITE";
}

// "ChecksumCRC32" and the like: the XML element of an algorithm ("crc32").
std::string checksum_element(std::string_view algorithm) {
  std::string name = "Checksum" + std::string(algorithm);
  for (std::size_t i = 8; i < name.size(); ++i)
    name[i] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[i])));
  return name;
}

// The checksums S3 answers for one part of a multipart object: the part's own, in each
// algorithm the object has a checksum in (the upload's), as uploaded.
store::Metadata part_checksums(const store::ObjectInfo& info, std::size_t index) {
  store::Metadata out;
  for (const auto& [algorithm, whole] : info.checksums) {
    for (const auto& [name, value] : info.parts[index].checksums) {
      if (name == algorithm) out.emplace_back(name, value);
    }
  }
  return out;
}

void object_headers(Response& response, const Call& call, const store::ObjectInfo& info) {
  response.set_header("ETag", quote_etag(info.etag));
  response.set_header("Last-Modified", http_date(info.seq));
  response.set_header("Content-Type",
                      info.content_type.empty() ? "binary/octet-stream" : info.content_type);
  response.set_header("Accept-Ranges", "bytes");
  for (const auto& [name, value] : info.user_meta) {
    if (name.starts_with(k_stored_header_mark)) {
      response.set_header(name.substr(k_stored_header_mark.size()), value);
    } else {
      response.set_header("x-amz-meta-" + name, value);
    }
  }
  // Stored checksums are echoed when the client asks (x-amz-checksum-mode: ENABLED), as S3.
  if (const auto* mode = call.header("x-amz-checksum-mode"); mode && iequals(*mode, "ENABLED")) {
    for (const auto& [algorithm, value] : info.checksums) {
      response.set_header("x-amz-checksum-" + algorithm, value);
      response.set_header("x-amz-checksum-type", std::string(checksum_type(value)));
    }
  }
  // response-* query overrides of GetObject.
  static constexpr std::pair<std::string_view, std::string_view> k_overrides[] = {
      {"response-content-type", "Content-Type"},
      {"response-content-disposition", "Content-Disposition"},
      {"response-content-encoding", "Content-Encoding"},
      {"response-content-language", "Content-Language"},
      {"response-cache-control", "Cache-Control"},
      {"response-expires", "Expires"}};
  for (const auto& [param, header] : k_overrides) {
    if (const auto* value = call.target.get(param))
      response.set_header(std::string(header), *value);
  }
}

}  // namespace

bool valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t extra = 0;
    std::uint32_t code = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xe0) == 0xc0) {
      extra = 1;
      code = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      extra = 2;
      code = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      extra = 3;
      code = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= text.size()) return false;
    for (std::size_t k = 1; k <= extra; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      code = (code << 6) | (next & 0x3f);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    constexpr std::uint32_t k_min[] = {0, 0x80, 0x800, 0x10000};
    if (code < k_min[extra] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return false;
    i += extra + 1;
  }
  return true;
}

namespace {

// Content-Encoding without the aws-chunked coding, which only framed the upload (S3 strips
// it and keeps the others, as sent when there was none).
std::string stored_content_encoding(std::string_view value) {
  const auto framed = [](std::string_view item) {
    return iequals(ascii::trim(item), "aws-chunked");
  };
  if (std::ranges::none_of(std::views::split(value, ','), [&](const auto& item) {
        return framed(std::string_view(item.begin(), item.end()));
      }))
    return std::string(value);
  std::string out;
  while (!value.empty()) {
    const auto comma = value.find(',');
    auto item = value.substr(0, comma);
    value = comma == std::string_view::npos ? std::string_view{} : value.substr(comma + 1);
    while (!item.empty() && item.front() == ' ')
      item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ')
      item.remove_suffix(1);
    if (item.empty() || iequals(item, "aws-chunked")) continue;
    if (!out.empty()) out += ",";
    out += item;
  }
  return out;
}

}  // namespace

store::Metadata user_metadata(const Request& request) {
  store::Metadata out;
  // Standard headers S3 stores with an object and returns on GET and HEAD.
  static constexpr std::string_view k_stored[] = {
      "Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language", "Expires"};
  for (const auto name : k_stored) {
    const auto value = request.joined_header(name);
    if (!value) continue;
    auto kept = name == "Content-Encoding" ? stored_content_encoding(*value) : *value;
    if (!kept.empty())
      out.emplace_back(std::string(k_stored_header_mark) + std::string(name), kept);
  }
  // A user metadata header sent twice is one entry, its values joined with "," as S3 does.
  constexpr std::string_view k_prefix = "x-amz-meta-";
  for (const auto& [name, value] : request.headers) {
    if (name.size() > k_prefix.size() &&
        iequals(std::string_view(name).substr(0, k_prefix.size()), k_prefix)) {
      const std::string key = ascii::lower(name.substr(k_prefix.size()));
      if (!valid_utf8(value)) fail(Err::invalid_argument, "Metadata values must be valid UTF-8.");
      const auto seen = std::ranges::find(out, key, &store::Metadata::value_type::first);
      if (seen == out.end())
        out.emplace_back(key, value);
      else
        seen->second += "," + value;
    }
  }
  return out;
}

std::string content_type_of(const Request& request) {
  const auto* type = request.header("content-type");
  return type && !type->empty() ? *type : std::string("binary/octet-stream");
}

std::optional<ByteRange> parse_range(std::string_view header, std::int64_t size) {
  // Only single "bytes=" ranges are honoured; anything else (several ranges, other units,
  // bad syntax) is ignored and the whole object is sent with 200, as S3 does.
  if (!header.starts_with("bytes=")) return std::nullopt;
  header.remove_prefix(6);
  if (header.find(',') != std::string_view::npos) return std::nullopt;
  const auto dash = header.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const auto first_text = header.substr(0, dash);
  const auto last_text = header.substr(dash + 1);
  const auto first = first_text.empty() ? std::optional<store::Seq>{} : parse_seq(first_text);
  const auto last = last_text.empty() ? std::optional<store::Seq>{} : parse_seq(last_text);
  if ((!first_text.empty() && !first) || (!last_text.empty() && !last) || (!first && !last)) {
    return std::nullopt;
  }
  ByteRange range;
  if (!first) {  // suffix: the last N bytes
    if (*last == 0 || size == 0) {
      range.unsatisfiable = true;
      return range;
    }
    range.start = std::max<std::int64_t>(0, size - *last);
    range.length = size - range.start;
    return range;
  }
  if (last && *last < *first) return std::nullopt;  // syntactically invalid: ignored
  if (*first >= size) {
    range.unsatisfiable = true;
    return range;
  }
  range.start = *first;
  const std::int64_t end = last ? std::min<std::int64_t>(*last, size - 1) : size - 1;
  range.length = end - range.start + 1;
  return range;
}

std::vector<BodySegment> segments_for(const store::Store& store, const store::ObjectInfo& info,
                                      std::int64_t start, std::int64_t length,
                                      const std::vector<std::shared_ptr<const OpenFile>>& files) {
  std::vector<BodySegment> out;
  std::int64_t part_start = 0;
  for (std::size_t i = 0; i < info.parts.size(); ++i) {
    const auto& part = info.parts[i];
    const std::int64_t part_end = part_start + part.size;
    const std::int64_t from = std::max(start, part_start);
    const std::int64_t to = std::min(start + length, part_end);
    if (from < to) {
      // A part copied by reference is a range of its blob file (part.offset on).
      BodySegment segment{{}, part.offset + from - part_start, to - from, nullptr, part.bytes};
      if (!part.bytes) segment.path = store.blob_path(part);
      if (i < files.size()) segment.file = files[i];
      out.push_back(std::move(segment));
    }
    part_start = part_end;
  }
  return out;
}

StoredBody store_body(Call& call) {
  if (const auto& file = call.body.file) {
    return {check(call.store.adopt_blob(file->path, file->sha256_hex)), crypto::to_hex(file->md5)};
  }
  return {check(call.store.write_blob(call.body.data)),
          crypto::to_hex(crypto::md5(call.body.data))};
}

store::WriteConditions write_conditions(const Call& call) {
  store::WriteConditions conditions;
  if (const auto* if_none_match = call.header("if-none-match")) {
    conditions.if_none_match_any = unquote(*if_none_match) == "*";
  }
  if (const auto* if_match = call.header("if-match")) {
    auto& etags = conditions.if_match.emplace();
    for (std::string_view list = *if_match; !list.empty();) {
      const auto comma = list.find(',');
      etags.emplace_back(unquote(list.substr(0, comma)));
      list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    }
  }
  return conditions;
}

void check_write_conditions(const Call& call, const store::WriteConditions& conditions) {
  if (conditions.empty()) return;
  const auto& bucket = call.target.bucket;
  const auto& key = call.target.key;
  auto current = call.store.get_object(bucket, key);
  std::optional<std::string_view> etag;
  if (current) {
    etag = current->etag;
  } else if (current.error().code != store::StoreErrc::no_such_key) {
    check(std::move(current), bucket, key);  // a missing bucket, a failed read
  }
  check(store::check_conditions(conditions, etag), bucket, key);
}

Response put_written(const store::ObjectInfo& info) {
  Response response;
  response.set_header("ETag", quote_etag(info.etag));
  for (const auto& [algorithm, value] : info.checksums) {
    response.set_header("x-amz-checksum-" + algorithm, value);
  }
  return response;
}

PendingWrite put_object(Call& call) {
  const auto& bucket = call.target.bucket;
  const auto& key = call.target.key;
  require(call, bucket, Access::write);
  if (call.header("x-tigris-snapshot-version")) fail(Err::snapshot_read_only);
  // A body spooled to a file is adopted as a blob before its row is written: ask first, so a
  // missing bucket leaves no orphan blob (and conditions below are judged in a bucket that
  // exists). A small body becomes a blob only in its row's transaction, which finds a missing
  // bucket itself: no read transaction of its own for the common small PUT.
  auto conditions = write_conditions(call);
  if (call.body.file || !conditions.empty()) check(call.store.head_bucket(bucket), bucket);
  check_write_conditions(call, conditions);
  PendingWrite write{bucket, key, {}, std::move(conditions)};
  write.object.content_type = content_type_of(call.request);
  write.object.user_meta = user_metadata(call.request);
  write.object.checksums = call.checksums;
  auto stored = store_body(call);
  write.object.etag = std::move(stored.etag);
  write.object.parts.push_back(stored.blob);
  return write;
}

Response get_object(Call& call) {
  const auto& bucket = call.target.bucket;
  const auto& key = call.target.key;
  require(call, bucket, Access::read);
  auto at = snapshot_version(call);
  const auto version = version_id(call);
  if (version) at = version;
  auto info = check(call.store.get_object(bucket, key, at), bucket, key);
  // The blob files are opened now and held until the body is sent (store.hpp: an overwrite
  // may unlink them); one already gone means a newer state, which is resolved again. Small
  // blobs came with their bytes.
  std::vector<std::shared_ptr<const OpenFile>> files;
  for (int attempt = 0; !call.is_head(); ++attempt) {
    files.clear();
    bool all_open = true;
    for (const auto& part : info.parts) {
      if (part.bytes) {
        files.push_back(nullptr);
        continue;
      }
      const int fd = ::open(call.store.blob_path(part).c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        all_open = false;
        break;
      }
      files.push_back(std::make_shared<const OpenFile>(fd));
    }
    if (all_open) break;
    if (attempt == 8) fail(Err::internal_error, "An object's data file is missing.");
    info = check(call.store.get_object(bucket, key, at), bucket, key);
  }
  if (version && info.seq != *version) {
    S3Error error = make_error(Err::no_such_version);
    error.key = key;
    fail(std::move(error));
  }
  if (auto not_modified = evaluate_conditions(call, info)) return std::move(*not_modified);

  Response response;
  object_headers(response, call, info);
  std::int64_t start = 0;
  std::int64_t length = info.size;
  const auto* range_header = call.header("range");
  if (const auto part = part_number(call)) {
    // GetObject/HeadObject ?partNumber=N: the bytes of that part of a multipart object; an
    // object uploaded whole has one part, itself.
    if (range_header) {
      fail(Err::invalid_request,
           "Cannot specify both Range header and partNumber query parameter.");
    }
    const auto count = parts_count(info);
    if (*part > count.value_or(1)) fail(Err::invalid_part_number);
    if (count) {
      for (int i = 0; i + 1 < *part; ++i)
        start += info.parts[static_cast<std::size_t>(i)].size;
      length = info.parts[static_cast<std::size_t>(*part - 1)].size;
      response.set_header("x-amz-mp-parts-count", std::to_string(*count));
      // The stored checksum is the whole object's: not the part's. The part's own is
      // answered instead, as S3 does (a client validating it reads exactly that part).
      remove_checksum_headers(response);
      if (const auto* mode = call.header("x-amz-checksum-mode");
          mode && iequals(*mode, "ENABLED")) {
        for (const auto& [algorithm, value] :
             part_checksums(info, static_cast<std::size_t>(*part - 1))) {
          response.set_header("x-amz-checksum-" + algorithm, value);
          response.set_header("x-amz-checksum-type", "COMPOSITE");
        }
      }
    }
    if (info.size > 0) {
      response.status = 206;
      response.set_header("Content-Range", "bytes " + std::to_string(start) + "-" +
                                               std::to_string(start + length - 1) + "/" +
                                               std::to_string(info.size));
    }
  } else if (range_header) {
    if (const auto range = parse_range(*range_header, info.size)) {
      if (range->unsatisfiable) {
        S3Error error = make_error(Err::invalid_range);
        error.headers.emplace_back("Content-Range", "bytes */" + std::to_string(info.size));
        fail(std::move(error));
      }
      start = range->start;
      length = range->length;
      response.status = 206;
      // The stored checksums are of the whole object: on a part of it, clients that validate
      // response checksums (boto3) would fail, so S3 leaves them out.
      remove_checksum_headers(response);
      response.set_header("Content-Range", "bytes " + std::to_string(start) + "-" +
                                               std::to_string(start + length - 1) + "/" +
                                               std::to_string(info.size));
    }
  }
  response.content_length = length;
  if (!call.is_head()) {
    response.blob_body = segments_for(call.store, info, start, length, files);
  }
  return response;
}

// GetObjectTagging: tags are not stored, so every object has an empty tag set. The AWS CLI
// asks for it on every S3-to-S3 copy, to carry the tags over.
Response get_object_tagging(Call& call) {
  const auto& bucket = call.target.bucket;
  const auto& key = call.target.key;
  require(call, bucket, Access::read);
  check(call.store.get_object(bucket, key, snapshot_version(call)), bucket, key);
  return xml_response(
      200,
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet/></Tagging>");
}

Response delete_object(Call& call) {
  require(call, call.target.bucket, Access::write);
  delete_one(call, call.target.key, call.target.get("versionId"));
  Response response;
  response.status = 204;
  return response;
}

Response delete_objects(Call& call) {
  const auto& bucket = call.target.bucket;
  require(call, bucket, Access::read);
  const bool can_write = allowed(call.principal, bucket, Access::write);

  pugi::xml_document document;
  // parse_ws_pcdata_single keeps a key made only of spaces.
  const auto parsed = document.load_buffer(call.body.data.data(), call.body.data.size(),
                                           pugi::parse_default | pugi::parse_ws_pcdata_single);
  const auto root = document.child("Delete");
  if (!parsed || !root) fail(Err::malformed_xml);
  const bool quiet = std::string_view(root.child_value("Quiet")) == "true";
  struct Item {
    std::string key;
    std::optional<std::string> version;  // <VersionId>, as sent
  };
  std::vector<Item> items;
  for (const auto object : root.children("Object")) {
    const auto key = object.child("Key");
    if (!key) fail(Err::malformed_xml);
    Item item{key.text().get(), std::nullopt};
    if (const auto version = object.child("VersionId")) item.version = version.text().get();
    items.push_back(std::move(item));
  }
  if (items.empty() || items.size() > 1000) fail(Err::malformed_xml);
  check(call.store.head_bucket(bucket), bucket);

  pugi::xml_document out;
  auto result = s3_root(out, "DeleteResult");
  for (const auto& item : items) {
    std::optional<S3Error> error;
    if (!can_write) {
      error = make_error(Err::access_denied);
    } else {
      try {
        delete_one(call, item.key, item.version ? &*item.version : nullptr);
      } catch (const S3Exception& e) {
        error = e.error();
      }
    }
    if (error) {
      auto node = result.append_child("Error");
      add_text(node, "Key", item.key);
      if (item.version) add_text(node, "VersionId", *item.version);
      add_text(node, "Code", error->code());
      add_text(node, "Message", error->text());
    } else if (!quiet) {
      // Missing keys are reported as deleted (server-design §5.6).
      auto node = result.append_child("Deleted");
      add_text(node, "Key", item.key);
      if (item.version) add_text(node, "VersionId", *item.version);
    }
  }
  return xml_response(200, to_string(out));
}

CopySource parse_copy_source(const Call& call) {
  // x-amz-copy-source: "[/]bucket/key[?versionId=v]", URL-encoded by the client (header
  // values reach the handler exactly as sent). A '?' inside an encoded key is "%3F", so the
  // first raw '?' starts the query; '+' is a literal plus here, not a space.
  std::string_view path = *call.header("x-amz-copy-source");
  CopySource source;
  if (const auto question = path.rfind("?versionId="); question != std::string_view::npos) {
    const auto value = path.substr(question + 11);
    if (!value.empty() && value != "null") {
      source.version = parse_seq(value);
      if (!source.version) fail(Err::invalid_argument, "Invalid version id specified");
    }
    path = path.substr(0, question);
  }
  if (path.starts_with('/')) path.remove_prefix(1);
  const auto slash = path.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == path.size()) {
    fail(Err::invalid_argument,
         "Copy Source must mention the source bucket and key: sourcebucket/sourcekey");
  }
  source.bucket = std::string(path.substr(0, slash));
  auto key = percent_decode(path.substr(slash + 1), false);
  if (!key) fail(Err::invalid_argument, "Copy Source is not URL-encoded correctly.");
  source.key = std::move(*key);
  if (source.key.size() > k_max_key_bytes) fail(Err::key_too_long);
  return source;
}

Response copy_object(Call& call) {
  const auto& bucket = call.target.bucket;
  const auto& key = call.target.key;
  const auto [source_bucket, source_key, source_version] = parse_copy_source(call);

  require(call, source_bucket, Access::read);
  require(call, bucket, Access::write);
  auto at = snapshot_version(call);  // tigris-wire §2.9: the source's point in time
  if (source_version) at = source_version;

  const auto* directive = call.header("x-amz-metadata-directive");
  const bool replace = directive && iequals(*directive, "REPLACE");
  if (directive && !replace && !iequals(*directive, "COPY")) {
    fail(Err::invalid_argument, "Unknown metadata directive.");
  }
  if (!replace && !at && source_bucket == bucket && source_key == key) {
    fail(Err::invalid_request,
         "This copy request is illegal because it is trying to copy an object to itself without "
         "changing the object's metadata, storage class, website redirect location or "
         "encryption attributes.");
  }
  if (source_version) {
    const auto info =
        check(call.store.get_object(source_bucket, source_key, at), source_bucket, source_key);
    if (info.seq != *source_version) fail(Err::no_such_version);
  }
  std::optional<store::NewObject> metadata;
  if (replace) {
    metadata.emplace();
    metadata->content_type = content_type_of(call.request);
    metadata->user_meta = user_metadata(call.request);
  }
  auto conditions = write_conditions(call);
  check_write_conditions(call, conditions);
  auto copied = call.store.copy_object(source_bucket, source_key, at, bucket, key,
                                       std::move(metadata), std::move(conditions));
  // The destination's conditions name the destination key; the rest, the source.
  const bool on_destination =
      !copied && copied.error().code == store::StoreErrc::precondition_failed;
  const auto info = on_destination ? check(std::move(copied), bucket, key)
                                   : check(std::move(copied), source_bucket, source_key);
  pugi::xml_document document;
  auto root = s3_root(document, "CopyObjectResult");
  add_text(root, "LastModified", iso8601_ms(info.seq));
  add_text(root, "ETag", quote_etag(info.etag));
  return xml_response(200, to_string(document));
}

// GetObjectAttributes: the attributes named in x-amz-object-attributes, in one document.
Response get_object_attributes(Call& call) {
  const auto& bucket = call.target.bucket;
  const auto& key = call.target.key;
  require(call, bucket, Access::read);
  const auto* names = call.header("x-amz-object-attributes");
  static constexpr std::string_view k_known[] = {"ETag", "Checksum", "ObjectParts", "StorageClass",
                                                 "ObjectSize"};
  std::vector<std::string> wanted;
  for (std::string_view list = names ? std::string_view(*names) : std::string_view{};
       !list.empty();) {
    const auto comma = list.find(',');
    auto item = list.substr(0, comma);
    while (!item.empty() && item.front() == ' ')
      item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ')
      item.remove_suffix(1);
    if (std::ranges::find(k_known, item) == std::end(k_known))
      fail(Err::invalid_argument, "Invalid attribute name specified.");
    wanted.emplace_back(item);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  if (wanted.empty()) {
    fail(Err::invalid_argument,
         "The x-amz-object-attributes header specifying the attributes to be retrieved is "
         "either missing or empty");
  }
  const auto wants = [&](std::string_view name) {
    return std::ranges::find(wanted, name) != wanted.end();
  };
  auto at = snapshot_version(call);
  const auto version = version_id(call);
  if (version) at = version;
  const auto info = check(call.store.get_object(bucket, key, at), bucket, key);
  if (version && info.seq != *version) {
    S3Error error = make_error(Err::no_such_version);
    error.key = key;
    fail(std::move(error));
  }

  pugi::xml_document document;
  auto root = s3_root(document, "GetObjectAttributesResponse");
  if (wants("ETag")) add_text(root, "ETag", info.etag);  // unquoted, as S3 answers here
  if (wants("Checksum") && !info.checksums.empty()) {
    auto checksum = root.append_child("Checksum");
    for (const auto& [algorithm, value] : info.checksums)
      add_text(checksum, checksum_element(algorithm).c_str(), value);
    add_text(checksum, "ChecksumType", checksum_type(info.checksums.front().second));
  }
  if (const auto count = parts_count(info); wants("ObjectParts") && count) {
    const int max_parts = [&] {
      const auto* text = call.target.get("max-parts");
      const auto value = text ? parse_seq(*text) : std::optional<store::Seq>(1000);
      if (!value) fail(Err::invalid_argument, "max-parts must be an integer.");
      return static_cast<int>(std::min<store::Seq>(*value, 1000));
    }();
    const auto* marker_text = call.header("x-amz-part-number-marker");
    const auto marker = marker_text ? parse_seq(*marker_text) : std::optional<store::Seq>(0);
    if (!marker) fail(Err::invalid_argument, "The part number marker must be an integer.");
    auto parts = root.append_child("ObjectParts");
    add_text(parts, "PartsCount", std::to_string(*count));  // TotalPartsCount
    add_text(parts, "PartNumberMarker", std::to_string(*marker));
    int shown = 0;
    int last = static_cast<int>(*marker);
    for (int number = static_cast<int>(*marker) + 1; number <= *count && shown < max_parts;
         ++number, ++shown) {
      auto part = parts.append_child("Part");
      add_text(part, "PartNumber", std::to_string(number));
      add_text(part, "Size", std::to_string(info.parts[static_cast<std::size_t>(number - 1)].size));
      for (const auto& [algorithm, value] :
           part_checksums(info, static_cast<std::size_t>(number - 1)))
        add_text(part, checksum_element(algorithm).c_str(), value);
      last = number;
    }
    add_text(parts, "NextPartNumberMarker", std::to_string(last));
    add_text(parts, "MaxParts", std::to_string(max_parts));
    add_text(parts, "IsTruncated", last < *count ? "true" : "false");
  }
  if (wants("StorageClass")) add_text(root, "StorageClass", "STANDARD");
  if (wants("ObjectSize")) add_text(root, "ObjectSize", std::to_string(info.size));
  auto response = xml_response(200, to_string(document));
  response.set_header("Last-Modified", http_date(info.seq));
  if (version) response.set_header("x-amz-version-id", std::to_string(info.seq));
  return response;
}

}  // namespace tfork::server
