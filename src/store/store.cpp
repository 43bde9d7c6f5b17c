// SPDX-License-Identifier: Apache-2.0
// Store::open, the Store defaults, and small domain helpers shared by the engine's files.

#include "tfork/crypto/hash.hpp"

#include <nlohmann/json.hpp>

#include "sqlite_store.hpp"
#include <fstream>

namespace tfork::store {

Result<std::unique_ptr<Store>> Store::open(const std::filesystem::path& dir,
                                           const StoreOptions& options) {
  return SqliteStore::open_at(dir, options);
}

Result<BlobRef> Store::adopt_blob(const std::filesystem::path& file, std::string_view sha256_hex) {
  // Generic fallback for other Store implementations: copy through write_blob.
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  std::ifstream in(file, std::ios::binary);
  if (ec || !in) return std::unexpected(StoreError{StoreErrc::io, "cannot read " + file.string()});
  std::string content(size, '\0');
  in.read(content.data(), static_cast<std::streamsize>(size));
  auto blob = write_blob(content);
  if (blob && blob->hash != sha256_hex) {
    return std::unexpected(StoreError{StoreErrc::invalid_argument, "sha256 mismatch"});
  }
  std::filesystem::remove(file, ec);
  return blob;
}

Result<BucketStats> Store::bucket_stats(std::string_view bucket) {
  BucketStats stats;
  ListQuery query;
  while (true) {
    auto page = list_objects(bucket, query);
    if (!page) return std::unexpected(std::move(page.error()));
    for (const auto& object : page->objects) {
      ++stats.objects;
      stats.bytes += object.size;
    }
    if (!page->truncated) return stats;
    query.after = page->last;
  }
}

std::optional<std::string> multipart_etag(const std::vector<std::string>& part_md5_hex) {
  const auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string binary;
  binary.reserve(part_md5_hex.size() * 16);
  for (const auto& hex : part_md5_hex) {
    if (hex.size() != 32) return std::nullopt;
    for (std::size_t i = 0; i < hex.size(); i += 2) {
      const int hi = nibble(hex[i]);
      const int lo = nibble(hex[i + 1]);
      if (hi < 0 || lo < 0) return std::nullopt;
      binary.push_back(static_cast<char>(hi * 16 + lo));
    }
  }
  return crypto::to_hex(crypto::md5(binary)) + "-" + std::to_string(part_md5_hex.size());
}

std::optional<std::string> encode_metadata(const Metadata& metadata) {
  if (metadata.empty()) return std::nullopt;
  auto pairs = nlohmann::json::array();
  for (const auto& [name, value] : metadata)
    pairs.push_back({name, value});
  return pairs.dump();
}

Metadata decode_metadata(const std::optional<std::string>& text) {
  Metadata out;
  if (!text) return out;
  const auto pairs = nlohmann::json::parse(*text, nullptr, false);
  if (!pairs.is_array()) return out;
  for (const auto& pair : pairs) {
    if (pair.is_array() && pair.size() == 2 && pair[0].is_string() && pair[1].is_string()) {
      out.emplace_back(pair[0].get<std::string>(), pair[1].get<std::string>());
    }
  }
  return out;
}

bool valid_key(std::string_view key) {
  // §6.2: up to 1024 bytes. NUL is refused because listing bounds are compared as TEXT.
  return !key.empty() && key.size() <= 1024 && key.find('\0') == std::string_view::npos;
}

std::optional<std::string> prefix_successor(std::string_view prefix) {
  std::string next(prefix);
  while (!next.empty() && static_cast<unsigned char>(next.back()) == 0xff)
    next.pop_back();
  if (next.empty()) return std::nullopt;
  next.back() = static_cast<char>(static_cast<unsigned char>(next.back()) + 1);
  return next;
}

}  // namespace tfork::store
