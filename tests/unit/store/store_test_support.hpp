// SPDX-License-Identifier: Apache-2.0
#pragma once
// Shared helpers for the store's unit tests: a store opened on a TempDir (temp_dir.hpp),
// and small put/read helpers.

#include "tfork/store/store.hpp"

#include <catch2/catch.hpp>
#include <sqlite3.h>

#include "temp_dir.hpp"
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdlib.h>
#include <string>
#include <string_view>

namespace tfork::store::test {

using tfork::test::TempDir;

// How many blob files the store at `dir` holds (what a write left behind, or freed).
inline std::size_t count_blob_files(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir / "blobs"))
    if (entry.is_regular_file()) ++n;
  return n;
}

inline std::unique_ptr<Store> open_store(const std::filesystem::path& dir,
                                         Durability durability = Durability::off) {
  auto store = Store::open(dir, StoreOptions{durability});
  if (!store) FAIL("Store::open: " << store.error().message);
  return std::move(*store);
}

inline ObjectInfo put_text(Store& store, std::string_view bucket, std::string_view key,
                           std::string_view content) {
  auto blob = store.write_blob(content);
  REQUIRE(blob);
  NewObject object;
  object.etag = "etag-" + std::string(content);
  object.content_type = "text/plain";
  object.parts = {*blob};
  auto info = store.put_object(bucket, key, std::move(object));
  if (!info) FAIL("put_object: " << info.error().message);
  return *info;
}

// Content too large to be kept in the database: a blob file.
inline std::string file_sized(std::string_view tag) {
  std::string out;
  while (std::ssize(out) <= k_max_db_blob)
    out += tag;
  return out;
}

inline std::string read_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in) return "<missing blob " + path.string() + ">";
  std::string content(size, '\0');
  in.read(content.data(), static_cast<std::streamsize>(size));
  return content;
}

inline std::string content_of(const Store& store, const ObjectInfo& info) {
  std::string out;
  for (const auto& part : info.parts)
    out += part.bytes ? *part.bytes : read_file(store.blob_path(part));
  return out;
}

// The content of a key as the store sees it, or "<code N>" when the read fails.
inline std::string get_text(Store& store, std::string_view bucket, std::string_view key,
                            std::optional<Seq> at = std::nullopt) {
  auto info = store.get_object(bucket, key, at);
  if (!info) return "<error " + std::to_string(static_cast<int>(info.error().code)) + ">";
  return content_of(store, *info);
}

inline std::string no_such_key() {
  return "<error " + std::to_string(static_cast<int>(StoreErrc::no_such_key)) + ">";
}

// A scalar query against meta.db through a separate connection (WAL lets it read while the
// store is open): how tests inspect rows without a test-only API.
inline std::int64_t count_rows(const std::filesystem::path& dir, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2((dir / "meta.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) ==
          SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
  std::int64_t value = -1;
  if (sqlite3_step(stmt) == SQLITE_ROW) value = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

}  // namespace tfork::store::test
