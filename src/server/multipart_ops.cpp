// SPDX-License-Identifier: Apache-2.0
// Multipart uploads (server-design §6.6: parts are blobs, Complete writes a manifest).
#include "tfork/crypto/hash.hpp"
#include "tfork/server/object_support.hpp"
#include "tfork/server/operations.hpp"
#include "tfork/server/payload.hpp"
#include "tfork/server/time_format.hpp"
#include "tfork/server/xml_render.hpp"

#include <pugixml.hpp>

#include <algorithm>
#include <fstream>

namespace tfork::server {
namespace {

constexpr int k_max_part_number = 10000;

// The upload named by ?uploadId, which must belong to this bucket and key.
store::UploadInfo upload_of(const Call& call) {
  const auto* id = call.target.get("uploadId");
  if (!id || id->empty()) fail(Err::invalid_argument, "uploadId is required.");
  auto upload = call.store.get_upload(*id);
  if (!upload || upload->bucket != call.target.bucket || upload->key != call.target.key) {
    S3Error error = make_error(Err::no_such_upload);
    error.key = call.target.key;
    fail(std::move(error));
  }
  return std::move(*upload);
}

int int_param(const Call& call, std::string_view name, int fallback, int low, int high) {
  const auto* text = call.target.get(name);
  if (!text) return fallback;
  const auto value = parse_seq(*text);
  if (!value || *value < low || *value > high) {
    fail(Err::invalid_argument, std::string(name) + " must be an integer between " +
                                    std::to_string(low) + " and " + std::to_string(high) + ".");
  }
  return static_cast<int>(*value);
}

std::string etag_text(std::string_view etag) {
  while (!etag.empty() && (etag.front() == ' ' || etag.front() == '"'))
    etag.remove_prefix(1);
  while (!etag.empty() && (etag.back() == ' ' || etag.back() == '"'))
    etag.remove_suffix(1);
  return std::string(etag);
}

// The algorithm an upload was created with (kept as its only checksum, with an empty value).
std::string upload_algorithm(const store::UploadInfo& upload) {
  return upload.checksums.empty() ? std::string() : upload.checksums.front().first;
}

std::string lower(std::string text) {
  for (auto& c : text)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string upper(std::string text) {
  for (auto& c : text)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

// x-amz-checksum-algorithm of CreateMultipartUpload, lowercased ("crc32", ...); empty when
// none was asked for.
std::string checksum_algorithm(const Call& call) {
  const auto* value = call.header("x-amz-checksum-algorithm");
  if (!value) return {};
  auto name = lower(*value);
  if (name != "crc32" && name != "crc32c" && name != "crc64nvme" && name != "sha1" &&
      name != "sha256") {
    fail(Err::invalid_request, "Checksum algorithm provided is unsupported.");
  }
  return name;
}

// "ChecksumCRC32" and the like: the XML element of an algorithm.
std::string checksum_element(std::string_view algorithm) {
  return "Checksum" + upper(std::string(algorithm));
}

// The part's checksum in `algorithm`: the verified header or trailer, or computed here.
std::string part_checksum(const Call& call, std::string_view algorithm) {
  for (const auto& [name, value] : call.checksums) {
    if (name == algorithm) return value;
  }
  if (const auto& file = call.body.file) {
    for (const auto& [name, value] : file->checksums) {
      if (name == algorithm) return value;
    }
    fail(Err::internal_error, "The part's checksum was not computed.");
  }
  return checksum_of(algorithm, call.body.data);
}

// `bytes=<first>-<last>`, both decimal (x-amz-copy-source-range); nullopt otherwise.
std::optional<std::pair<std::int64_t, std::int64_t>> copy_range(std::string_view text) {
  if (!text.starts_with("bytes=")) return std::nullopt;
  text.remove_prefix(6);
  const auto dash = text.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const auto first = parse_seq(text.substr(0, dash));
  const auto last = parse_seq(text.substr(dash + 1));
  if (!first || !last || *last < *first) return std::nullopt;
  return std::pair{*first, *last};
}

}  // namespace

Response create_multipart_upload(Call& call) {
  const auto& bucket = call.target.bucket;
  require(call, bucket, Access::write);
  if (call.header("x-tigris-snapshot-version")) fail(Err::snapshot_read_only);
  store::NewObject meta;
  meta.content_type = content_type_of(call.request);
  meta.user_meta = user_metadata(call.request);
  const auto algorithm = checksum_algorithm(call);
  if (!algorithm.empty()) meta.checksums.emplace_back(algorithm, "");
  const auto upload =
      check(call.store.create_upload(bucket, call.target.key, std::move(meta)), bucket);
  pugi::xml_document document;
  auto root = s3_root(document, "InitiateMultipartUploadResult");
  add_text(root, "Bucket", bucket);
  add_text(root, "Key", call.target.key);
  add_text(root, "UploadId", upload.upload_id);
  auto response = xml_response(200, to_string(document));
  if (!algorithm.empty()) {
    response.set_header("x-amz-checksum-algorithm", upper(algorithm));
    response.set_header("x-amz-checksum-type", "COMPOSITE");
  }
  return response;
}

namespace {

Response copy_part_result(const store::ObjectInfo& source, std::string_view etag,
                          const store::Metadata& checksums) {
  pugi::xml_document document;
  auto root = s3_root(document, "CopyPartResult");
  add_text(root, "LastModified", iso8601_ms(source.seq));
  add_text(root, "ETag", quote_etag(etag));
  for (const auto& [name, value] : checksums)
    add_text(root, checksum_element(name).c_str(), value);
  return xml_response(200, to_string(document));
}

bool is_md5_hex(std::string_view etag) {
  return etag.size() == 32 && std::ranges::all_of(etag, [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// UploadPartCopy by reference (issue 24 §2.3): a range inside one stored blob file becomes a
// part that refers to that file (Store::put_part_copy), so concurrent part copies write no
// data. Its ETag is the md5 of the range: the source's own when the range is the whole of a
// one-blob object, else read (never written) from the file. nullopt: copy the bytes instead
// (a range across parts, or of bytes kept in the database).
std::optional<Response> copy_part_by_reference(Call& call, const store::UploadInfo& upload,
                                               int part_number, const store::ObjectInfo& info,
                                               std::int64_t start, std::int64_t length) {
  std::int64_t part_start = 0;
  const store::BlobRef* part = nullptr;
  for (const auto& candidate : info.parts) {
    if (start >= part_start && start + length <= part_start + candidate.size) {
      part = &candidate;
      break;
    }
    part_start += candidate.size;
  }
  if (length == 0 || part == nullptr || part->bytes) return std::nullopt;
  store::BlobRef range{part->hash, length, {}, {}, {}, part->offset + start - part_start};

  std::string etag;
  if (info.parts.size() == 1 && length == info.size && is_md5_hex(info.etag)) {
    etag = info.etag;
  } else {
    std::ifstream in(call.store.blob_path(range), std::ios::binary);
    in.seekg(range.offset);
    crypto::Digest md5(crypto::Digest::Algorithm::md5);
    std::string buffer(std::size_t{256} << 10, '\0');
    for (std::int64_t left = length; left > 0;) {
      const auto want = static_cast<std::streamsize>(
          std::min<std::int64_t>(left, static_cast<std::int64_t>(buffer.size())));
      if (!in.read(buffer.data(), want))
        fail(Err::internal_error, "Could not read the copy source.");
      md5.update(std::string_view(buffer.data(), static_cast<std::size_t>(want)));
      left -= want;
    }
    etag = crypto::to_hex(md5.finish());
  }
  check(call.store.put_part_copy(upload.upload_id, part_number, std::move(range), etag));
  return copy_part_result(info, etag, {});
}

}  // namespace

// UploadPartCopy: the part is a byte range (x-amz-copy-source-range, else everything) of an
// existing object, by reference to its blob file where it can be, else read from its blobs;
// the AWS CLI copies large objects this way.
Response upload_part_copy(Call& call, const store::UploadInfo& upload, int part_number) {
  const auto source = parse_copy_source(call);
  require(call, source.bucket, Access::read);
  auto at = snapshot_version(call);
  if (source.version) at = source.version;
  const auto info =
      check(call.store.get_object(source.bucket, source.key, at), source.bucket, source.key);
  std::int64_t start = 0;
  std::int64_t length = info.size;
  if (const auto* header = call.header("x-amz-copy-source-range")) {
    // As S3: a malformed range is InvalidArgument, one past the source's end InvalidRange.
    const auto range = copy_range(*header);
    if (!range) {
      fail(Err::invalid_argument,
           "The x-amz-copy-source-range value must be of the form bytes=first-last where "
           "first and last are the zero-based offsets of the first and last bytes to copy");
    }
    if (range->second >= info.size) {
      fail(Err::invalid_range, "The requested range is not satisfiable");
    }
    start = range->first;
    length = range->second - range->first + 1;
  }
  if (length > static_cast<std::int64_t>(k_max_object_body)) fail(Err::entity_too_large);
  const auto algorithm = upload_algorithm(upload);
  if (algorithm.empty()) {
    if (auto copied = copy_part_by_reference(call, upload, part_number, info, start, length))
      return std::move(*copied);
  }
  // Else streamed through a fixed buffer into a new blob: a part copy never holds its range in
  // memory (up to 5 GiB, S3's part limit).
  SpoolFile spool(call.store.tmp_dir(),
                  algorithm.empty() ? std::vector<std::string>{} : std::vector{algorithm});
  std::string buffer(std::size_t{256} << 10, '\0');
  for (const auto& segment : segments_for(call.store, info, start, length)) {
    if (segment.bytes) {
      const auto bytes = std::string_view(*segment.bytes)
                             .substr(static_cast<std::size_t>(segment.offset),
                                     static_cast<std::size_t>(segment.length));
      if (auto written = spool.write(bytes); !written) fail(std::move(written.error()));
      continue;
    }
    std::ifstream in(segment.path, std::ios::binary);
    in.seekg(segment.offset);
    for (std::int64_t left = segment.length; left > 0;) {
      const auto want = static_cast<std::streamsize>(
          std::min<std::int64_t>(left, static_cast<std::int64_t>(buffer.size())));
      if (!in.read(buffer.data(), want))
        fail(Err::internal_error, "Could not read the copy source.");
      if (auto written =
              spool.write(std::string_view(buffer.data(), static_cast<std::size_t>(want)));
          !written) {
        fail(std::move(written.error()));
      }
      left -= want;
    }
  }
  auto spooled = spool.finish();
  if (!spooled) fail(std::move(spooled.error()));
  const auto blob = check(call.store.adopt_blob(spooled->path, spooled->sha256_hex));
  const auto etag = crypto::to_hex(spooled->md5);
  check(call.store.put_part(upload.upload_id, part_number, blob, etag, spooled->checksums));
  return copy_part_result(info, etag, spooled->checksums);
}

Response upload_part(Call& call) {
  require(call, call.target.bucket, Access::write);
  const int part_number = int_param(call, "partNumber", 0, 1, k_max_part_number);
  if (part_number == 0) fail(Err::invalid_argument, "partNumber is required.");
  const auto upload = upload_of(call);
  if (call.header("x-amz-copy-source")) return upload_part_copy(call, upload, part_number);
  // The part keeps the checksums its client sent, and the upload's algorithm's in any case:
  // Complete builds the object's composite checksum from them.
  auto checksums = call.checksums;
  if (const auto algorithm = upload_algorithm(upload);
      !algorithm.empty() &&
      std::ranges::find(checksums, algorithm, &std::pair<std::string, std::string>::first) ==
          checksums.end()) {
    checksums.emplace_back(algorithm, part_checksum(call, algorithm));
  }
  const auto [blob, etag] = store_body(call);
  check(call.store.put_part(upload.upload_id, part_number, blob, etag, checksums));
  Response response;
  response.set_header("ETag", quote_etag(etag));
  for (const auto& [algorithm, value] : checksums) {
    response.set_header("x-amz-checksum-" + algorithm, value);
  }
  return response;
}

Response complete_multipart_upload(Call& call) {
  const auto& bucket = call.target.bucket;
  require(call, bucket, Access::write);
  const auto upload = upload_of(call);
  auto conditions = write_conditions(call);
  check_write_conditions(call, conditions);
  const auto algorithm = upload_algorithm(upload);

  pugi::xml_document document;
  const auto parsed = document.load_buffer(call.body.data.data(), call.body.data.size());
  const auto root = document.child("CompleteMultipartUpload");
  if (!parsed || !root) fail(Err::malformed_xml);
  std::vector<std::pair<int, std::string>> parts;
  std::vector<std::string> claimed_checksums;  // the client's Checksum<ALGORITHM>, if any
  for (const auto part : root.children("Part")) {
    const auto number = parse_seq(part.child_value("PartNumber"));
    if (!number || *number < 1 || *number > k_max_part_number) fail(Err::malformed_xml);
    parts.emplace_back(static_cast<int>(*number), etag_text(part.child_value("ETag")));
    claimed_checksums.emplace_back(
        algorithm.empty() ? "" : part.child_value(checksum_element(algorithm).c_str()));
  }
  if (parts.empty()) fail(Err::malformed_xml, "You must specify at least one part");
  if (!std::ranges::is_sorted(parts,
                              [](const auto& a, const auto& b) { return a.first <= b.first; })) {
    fail(Err::invalid_part_order);
  }
  // S3's rules on the listed parts: each was uploaded with that ETag (and checksum, when the
  // client names one), and all but the last are at least 5 MiB. The store checks the parts
  // again under its lock.
  const auto uploaded = check(call.store.list_parts(upload.upload_id));
  std::string part_digests;  // the parts' raw checksums, concatenated
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto found = std::ranges::find(uploaded, parts[i].first, &store::PartInfo::part_number);
    if (found == uploaded.end() || lower(etag_text(found->etag)) != lower(parts[i].second)) {
      fail(Err::invalid_part);
    }
    if (i + 1 < parts.size() && found->blob.size < k_min_part_size) {
      S3Error error = make_error(Err::entity_too_small);
      error.key = call.target.key;
      fail(std::move(error));
    }
    if (algorithm.empty()) continue;
    const auto stored =
        std::ranges::find(found->checksums, algorithm, &std::pair<std::string, std::string>::first);
    const auto digest = stored == found->checksums.end() ? std::optional<std::string>()
                                                         : crypto::base64_decode(stored->second);
    if (!digest || (!claimed_checksums[i].empty() && claimed_checksums[i] != stored->second)) {
      fail(Err::invalid_part);
    }
    part_digests += *digest;
  }
  // The composite checksum: the checksum of the parts' checksums, "-<parts>" (as S3).
  std::optional<store::Metadata> checksums;
  if (!algorithm.empty()) {
    checksums = store::Metadata{
        {algorithm, checksum_of(algorithm, part_digests) + "-" + std::to_string(parts.size())}};
  }
  const auto info =
      check(call.store.complete_upload(upload.upload_id, parts, checksums, std::move(conditions)),
            bucket, call.target.key);
  pugi::xml_document out;
  auto result = s3_root(out, "CompleteMultipartUploadResult");
  const auto host = call.request.header_or("host", "127.0.0.1");
  add_text(result, "Location", "http://" + host + call.target.wire_path);
  add_text(result, "Bucket", bucket);
  add_text(result, "Key", call.target.key);
  add_text(result, "ETag", quote_etag(info.etag));
  for (const auto& [name, value] : info.checksums) {
    add_text(result, checksum_element(name).c_str(), value);
    add_text(result, "ChecksumType", "COMPOSITE");
  }
  return xml_response(200, to_string(out));
}

Response abort_multipart_upload(Call& call) {
  require(call, call.target.bucket, Access::write);
  const auto upload = upload_of(call);
  check(call.store.abort_upload(upload.upload_id));
  Response response;
  response.status = 204;
  return response;
}

Response list_parts(Call& call) {
  const auto& bucket = call.target.bucket;
  require(call, bucket, Access::read);
  const auto upload = upload_of(call);
  const int max_parts = int_param(call, "max-parts", 1000, 0, 1000);
  const int marker = int_param(call, "part-number-marker", 0, 0, k_max_part_number);
  auto parts = check(call.store.list_parts(upload.upload_id));
  std::ranges::sort(parts, {}, &store::PartInfo::part_number);
  std::erase_if(parts, [&](const auto& part) { return part.part_number <= marker; });
  const bool truncated = parts.size() > static_cast<std::size_t>(max_parts);
  if (truncated) parts.resize(static_cast<std::size_t>(max_parts));

  pugi::xml_document document;
  auto root = s3_root(document, "ListPartsResult");
  add_text(root, "Bucket", bucket);
  add_text(root, "Key", call.target.key);
  add_text(root, "UploadId", upload.upload_id);
  add_text(root, "PartNumberMarker", std::to_string(marker));
  if (!parts.empty())
    add_text(root, "NextPartNumberMarker", std::to_string(parts.back().part_number));
  add_text(root, "MaxParts", std::to_string(max_parts));
  add_text(root, "IsTruncated", truncated ? "true" : "false");
  add_text(root, "StorageClass", "STANDARD");
  const auto algorithm = upload_algorithm(upload);
  if (!algorithm.empty()) add_text(root, "ChecksumAlgorithm", upper(algorithm));
  for (const auto& part : parts) {
    auto node = root.append_child("Part");
    add_text(node, "PartNumber", std::to_string(part.part_number));
    add_text(node, "LastModified", iso8601_ms(upload.created));
    add_text(node, "ETag", quote_etag(part.etag));
    add_text(node, "Size", std::to_string(part.blob.size));
    for (const auto& [name, value] : part.checksums)
      add_text(node, checksum_element(name).c_str(), value);
  }
  return xml_response(200, to_string(document));
}

// ListMultipartUploads: the uploads in progress, by key then initiation, from after
// key-marker (and upload-id-marker within that key), at most max-uploads of them.
Response list_multipart_uploads(Call& call) {
  const auto& bucket = call.target.bucket;
  require(call, bucket, Access::read);
  const auto param = [&](std::string_view name) {
    const auto* value = call.target.get(name);
    return value ? *value : std::string();
  };
  const auto prefix = param("prefix");
  const auto delimiter = param("delimiter");
  const auto key_marker = param("key-marker");
  const auto id_marker = param("upload-id-marker");
  const int max_uploads = int_param(call, "max-uploads", 1000, 0, 2147483647);
  const bool url = call.target.has("encoding-type");
  if (url && param("encoding-type") != "url")
    fail(Err::invalid_argument, "Invalid Encoding Method specified in Request");
  const auto encode = [&](std::string_view text) {
    return url ? url_encode_key(text) : std::string(text);
  };
  auto uploads = check(call.store.list_uploads(bucket, prefix), bucket);

  pugi::xml_document document;
  auto root = s3_root(document, "ListMultipartUploadsResult");
  add_text(root, "Bucket", bucket);
  add_text(root, "KeyMarker", encode(key_marker));
  add_text(root, "UploadIdMarker", id_marker);
  add_text(root, "Prefix", encode(prefix));
  if (!delimiter.empty()) add_text(root, "Delimiter", encode(delimiter));
  add_text(root, "MaxUploads", std::to_string(std::min(max_uploads, 1000)));
  if (url) add_text(root, "EncodingType", "url");
  std::vector<std::string> common_prefixes;
  std::vector<const store::UploadInfo*> shown;
  const auto limit = std::min(max_uploads, 1000);
  bool truncated = false;
  std::string next_key;  // the last key or common prefix answered
  std::string next_id;   // and the last upload id, for a key
  // With upload-id-marker, the marker key's uploads after that upload (in this listing's
  // order; by id when it is gone) are listed.
  const bool marker_upload_present =
      !id_marker.empty() && std::ranges::any_of(uploads, [&](const auto& upload) {
        return upload.key == key_marker && upload.upload_id == id_marker;
      });
  bool past_marker_upload = false;
  for (const auto& upload : uploads) {
    if (!key_marker.empty()) {
      if (upload.key < key_marker) continue;
      if (upload.key == key_marker) {
        if (id_marker.empty()) continue;
        if (marker_upload_present) {
          const bool is_marker = upload.upload_id == id_marker;
          if (!past_marker_upload) {
            past_marker_upload = is_marker;
            continue;
          }
        } else if (upload.upload_id <= id_marker) {
          continue;
        }
      }
    }
    if (!delimiter.empty()) {
      const auto at = upload.key.find(delimiter, prefix.size());
      if (at != std::string::npos) {
        auto rolled = upload.key.substr(0, at + delimiter.size());
        // A prefix answered on an earlier page (it was the NextKeyMarker) is not repeated.
        if (rolled == key_marker || (!common_prefixes.empty() && common_prefixes.back() == rolled))
          continue;
        if (static_cast<int>(shown.size() + common_prefixes.size()) >= limit) {
          truncated = true;
          break;
        }
        next_key = rolled;
        next_id.clear();
        common_prefixes.push_back(std::move(rolled));
        continue;
      }
    }
    if (static_cast<int>(shown.size() + common_prefixes.size()) >= limit) {
      truncated = true;
      break;
    }
    next_key = upload.key;
    next_id = upload.upload_id;
    shown.push_back(&upload);
  }
  if (truncated) {
    add_text(root, "NextKeyMarker", encode(next_key));
    add_text(root, "NextUploadIdMarker", next_id);
  }
  add_text(root, "IsTruncated", truncated ? "true" : "false");
  for (const auto* upload : shown) {
    auto node = root.append_child("Upload");
    add_text(node, "Key", encode(upload->key));
    add_text(node, "UploadId", upload->upload_id);
    for (const char* who : {"Initiator", "Owner"}) {
      auto person = node.append_child(who);
      add_text(person, "ID", "tfork");
      add_text(person, "DisplayName", "tfork");
    }
    add_text(node, "StorageClass", "STANDARD");
    add_text(node, "Initiated", iso8601_ms(upload->created));
    if (const auto algorithm = upload_algorithm(*upload); !algorithm.empty())
      add_text(node, "ChecksumAlgorithm", upper(algorithm));
  }
  for (const auto& common : common_prefixes)
    add_text(root.append_child("CommonPrefixes"), "Prefix", encode(common));
  return xml_response(200, to_string(document));
}

}  // namespace tfork::server
