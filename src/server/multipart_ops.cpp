// Multipart uploads (server-design §6.6: parts are blobs, Complete writes a manifest).
#include "tfork/crypto/hash.hpp"
#include "tfork/server/object_support.hpp"
#include "tfork/server/operations.hpp"
#include "tfork/server/time_format.hpp"
#include "tfork/server/xml_render.hpp"

#include <pugixml.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace tfork::server {
namespace {

constexpr int k_max_part_number = 10000;

// The upload named by ?uploadId, which must belong to this bucket and key.
store::UploadInfo upload_of(const Context& context) {
  const auto* id = context.target.get("uploadId");
  if (!id || id->empty()) fail(Err::invalid_argument, "uploadId is required.");
  auto upload = context.store.get_upload(*id);
  if (!upload || upload->bucket != context.target.bucket || upload->key != context.target.key) {
    S3Error error = make_error(Err::no_such_upload);
    error.key = context.target.key;
    fail(std::move(error));
  }
  return std::move(*upload);
}

int int_param(const Context& context, std::string_view name, int fallback, int low, int high) {
  const auto* text = context.target.get(name);
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

}  // namespace

Response create_multipart_upload(Context& context) {
  const auto& bucket = context.target.bucket;
  require(context, bucket, Access::write);
  if (context.header("x-tigris-snapshot-version")) fail(Err::snapshot_read_only);
  store::NewObject meta;
  meta.content_type = content_type_of(context.request);
  meta.user_meta = user_metadata(context.request);
  const auto upload =
      check(context.store.create_upload(bucket, context.target.key, std::move(meta)), bucket);
  pugi::xml_document document;
  auto root = s3_root(document, "InitiateMultipartUploadResult");
  add_text(root, "Bucket", bucket);
  add_text(root, "Key", context.target.key);
  add_text(root, "UploadId", upload.upload_id);
  return xml_response(200, to_string(document));
}

// UploadPartCopy: the part is a byte range (x-amz-copy-source-range, else everything) of an
// existing object, read from its blob files; the AWS CLI copies large objects this way.
Response upload_part_copy(Context& context, const store::UploadInfo& upload, int part_number) {
  const auto source = parse_copy_source(context);
  require(context, source.bucket, Access::read);
  auto at = snapshot_version(context);
  if (source.version) at = source.version;
  const auto info =
      check(context.store.get_object(source.bucket, source.key, at), source.bucket, source.key);
  std::int64_t start = 0;
  std::int64_t length = info.size;
  if (const auto* range = context.header("x-amz-copy-source-range")) {
    long long first = -1, last = -1;
    if (std::sscanf(range->c_str(), "bytes=%lld-%lld", &first, &last) != 2 || first < 0 ||
        last < first || last >= info.size) {
      fail(Err::invalid_argument,
           "The x-amz-copy-source-range value must be bytes=first-last "
           "within the source object.");
    }
    start = first;
    length = last - first + 1;
  }
  // Streamed through a fixed buffer into a new blob: a part copy never holds its range in
  // memory (up to 5 GiB, S3's part limit).
  if (length > static_cast<std::int64_t>(k_max_object_body)) fail(Err::entity_too_large);
  SpoolFile spool(context.store.tmp_dir(), {});
  std::string buffer(std::size_t{256} << 10, '\0');
  for (const auto& segment : segments_for(context.store, info, start, length)) {
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
  const auto blob = check(context.store.adopt_blob(spooled->path, spooled->sha256_hex));
  const auto etag = crypto::to_hex(spooled->md5);
  check(context.store.put_part(upload.upload_id, part_number, blob, etag));
  pugi::xml_document document;
  auto root = s3_root(document, "CopyPartResult");
  add_text(root, "LastModified", iso8601_ms(info.seq));
  add_text(root, "ETag", quote_etag(etag));
  return xml_response(200, to_string(document));
}

Response upload_part(Context& context) {
  require(context, context.target.bucket, Access::write);
  const int part_number = int_param(context, "partNumber", 0, 1, k_max_part_number);
  if (part_number == 0) fail(Err::invalid_argument, "partNumber is required.");
  const auto upload = upload_of(context);
  if (context.header("x-amz-copy-source")) return upload_part_copy(context, upload, part_number);
  const auto [blob, etag] = store_body(context);
  check(context.store.put_part(upload.upload_id, part_number, blob, etag));
  Response response;
  response.set_header("ETag", quote_etag(etag));
  for (const auto& [algorithm, value] : context.checksums) {
    response.set_header("x-amz-checksum-" + algorithm, value);
  }
  return response;
}

Response complete_multipart_upload(Context& context) {
  const auto& bucket = context.target.bucket;
  require(context, bucket, Access::write);
  const auto upload = upload_of(context);

  pugi::xml_document document;
  const auto parsed = document.load_buffer(context.body.data.data(), context.body.data.size());
  const auto root = document.child("CompleteMultipartUpload");
  if (!parsed || !root) fail(Err::malformed_xml);
  std::vector<std::pair<int, std::string>> parts;
  for (const auto part : root.children("Part")) {
    const auto number = parse_seq(part.child_value("PartNumber"));
    if (!number || *number < 1 || *number > k_max_part_number) fail(Err::malformed_xml);
    parts.emplace_back(static_cast<int>(*number), etag_text(part.child_value("ETag")));
  }
  if (parts.empty()) fail(Err::malformed_xml, "You must specify at least one part");
  if (!std::ranges::is_sorted(parts,
                              [](const auto& a, const auto& b) { return a.first <= b.first; })) {
    fail(Err::invalid_part_order);
  }
  const auto info =
      check(context.store.complete_upload(upload.upload_id, parts), bucket, context.target.key);
  pugi::xml_document out;
  auto result = s3_root(out, "CompleteMultipartUploadResult");
  const auto host = context.request.header_or("host", "127.0.0.1");
  add_text(result, "Location", "http://" + host + context.target.wire_path);
  add_text(result, "Bucket", bucket);
  add_text(result, "Key", context.target.key);
  add_text(result, "ETag", quote_etag(info.etag));
  return xml_response(200, to_string(out));
}

Response abort_multipart_upload(Context& context) {
  require(context, context.target.bucket, Access::write);
  const auto upload = upload_of(context);
  check(context.store.abort_upload(upload.upload_id));
  Response response;
  response.status = 204;
  return response;
}

Response list_parts(Context& context) {
  const auto& bucket = context.target.bucket;
  require(context, bucket, Access::read);
  const auto upload = upload_of(context);
  const int max_parts = int_param(context, "max-parts", 1000, 0, 1000);
  const int marker = int_param(context, "part-number-marker", 0, 0, k_max_part_number);
  auto parts = check(context.store.list_parts(upload.upload_id));
  std::ranges::sort(parts, {}, &store::PartInfo::part_number);
  std::erase_if(parts, [&](const auto& part) { return part.part_number <= marker; });
  const bool truncated = parts.size() > static_cast<std::size_t>(max_parts);
  if (truncated) parts.resize(static_cast<std::size_t>(max_parts));

  pugi::xml_document document;
  auto root = s3_root(document, "ListPartsResult");
  add_text(root, "Bucket", bucket);
  add_text(root, "Key", context.target.key);
  add_text(root, "UploadId", upload.upload_id);
  add_text(root, "PartNumberMarker", std::to_string(marker));
  if (!parts.empty())
    add_text(root, "NextPartNumberMarker", std::to_string(parts.back().part_number));
  add_text(root, "MaxParts", std::to_string(max_parts));
  add_text(root, "IsTruncated", truncated ? "true" : "false");
  add_text(root, "StorageClass", "STANDARD");
  for (const auto& part : parts) {
    auto node = root.append_child("Part");
    add_text(node, "PartNumber", std::to_string(part.part_number));
    add_text(node, "LastModified", iso8601_ms(upload.created));
    add_text(node, "ETag", quote_etag(part.etag));
    add_text(node, "Size", std::to_string(part.blob.size));
  }
  return xml_response(200, to_string(document));
}

}  // namespace tfork::server
