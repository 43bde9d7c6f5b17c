// SPDX-License-Identifier: Apache-2.0
#include "tfork/server/xml_render.hpp"

#include "tfork/server/time_format.hpp"

namespace tfork::server {
namespace {

struct StringWriter : pugi::xml_writer {
  std::string out;
  void write(const void* data, std::size_t size) override {
    out.append(static_cast<const char*>(data), size);
  }
};

}  // namespace

std::string quote_etag(std::string_view etag) {
  return "\"" + std::string(etag) + "\"";
}

pugi::xml_node add_text(pugi::xml_node parent, const char* name, std::string_view value) {
  auto node = parent.append_child(name);
  node.append_child(pugi::node_pcdata).set_value(std::string(value).c_str());
  return node;
}

pugi::xml_node s3_root(pugi::xml_document& document, const char* name) {
  auto root = document.append_child(name);
  root.append_attribute("xmlns") = k_s3_namespace;
  return root;
}

std::string to_string(const pugi::xml_document& document) {
  StringWriter writer;
  writer.out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  document.save(writer, "", pugi::format_raw | pugi::format_no_declaration, pugi::encoding_utf8);
  return writer.out;
}

std::string url_encode_key(std::string_view key) {
  static constexpr char k_hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(key.size());
  for (const char c : key) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z') ||
        (byte >= '0' && byte <= '9') || byte == '-' || byte == '_' || byte == '.' || byte == '~' ||
        byte == '/') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(k_hex[byte >> 4]);
      out.push_back(k_hex[byte & 15]);
    }
  }
  return out;
}

std::string render_error(const S3Error& error, std::string_view resource,
                         std::string_view request_id) {
  pugi::xml_document document;
  // S3 error documents carry no namespace (AWS ErrorResponses).
  auto root = document.append_child("Error");
  add_text(root, "Code", error.code());
  add_text(root, "Message", error.text());
  if (!error.bucket.empty()) add_text(root, "BucketName", error.bucket);
  if (!error.key.empty()) add_text(root, "Key", error.key);
  add_text(root, "Resource", resource);
  add_text(root, "RequestId", request_id);
  return to_string(document);
}

std::string render_list_objects(const ListResult& result) {
  const auto encode = [&](std::string_view value) {
    return result.url_encoding ? url_encode_key(value) : std::string(value);
  };
  pugi::xml_document document;
  auto root = s3_root(document, "ListBucketResult");
  add_text(root, "Name", result.bucket);
  add_text(root, "Prefix", encode(result.prefix));
  if (result.version == 2) {
    if (result.start_after) add_text(root, "StartAfter", encode(*result.start_after));
    if (result.continuation_token) add_text(root, "ContinuationToken", *result.continuation_token);
    if (result.next_continuation_token) {
      add_text(root, "NextContinuationToken", *result.next_continuation_token);
    }
    add_text(root, "KeyCount",
             std::to_string(result.page.objects.size() + result.page.common_prefixes.size()));
  } else {
    add_text(root, "Marker", encode(result.marker));
    if (result.next_marker) add_text(root, "NextMarker", encode(*result.next_marker));
  }
  add_text(root, "MaxKeys", std::to_string(result.max_keys));
  if (!result.delimiter.empty()) add_text(root, "Delimiter", encode(result.delimiter));
  // botocore decodes the listed fields only when EncodingType is echoed (server-design §5.5).
  if (result.url_encoding) add_text(root, "EncodingType", "url");
  add_text(root, "IsTruncated", result.page.truncated ? "true" : "false");
  for (const auto& object : result.page.objects) {
    auto contents = root.append_child("Contents");
    add_text(contents, "Key", encode(object.key));
    add_text(contents, "LastModified", iso8601_ms(object.seq));
    add_text(contents, "ETag", quote_etag(object.etag));
    add_text(contents, "Size", std::to_string(object.size));
    if (result.version == 1 || result.fetch_owner) {
      auto owner = contents.append_child("Owner");
      add_text(owner, "ID", result.owner_id);
      add_text(owner, "DisplayName", result.owner_id);
    }
    add_text(contents, "StorageClass", "STANDARD");
  }
  for (const auto& prefix : result.page.common_prefixes) {
    auto common = root.append_child("CommonPrefixes");
    add_text(common, "Prefix", encode(prefix));
  }
  return to_string(document);
}

}  // namespace tfork::server
