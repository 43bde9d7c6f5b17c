// SPDX-License-Identifier: Apache-2.0
#pragma once
// Thin RAII over the SQLite C API, private to the store (server-design.md §3, §6.8).
// Failures throw DbError; the store turns them into StoreErrc::io (no_space when the disk is
// full) at its public boundary, so the engine's logic reads as straight-line SQL without error
// plumbing on every step.

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

namespace tfork::store::sqlite {

class DbError : public std::runtime_error {
 public:
  DbError(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

// One prepared statement. Bind indexes are 1-based, column indexes 0-based (as in SQLite).
class Stmt {
 public:
  Stmt(sqlite3* db, std::string_view sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Stmt& bind(int index, std::int64_t value);
  Stmt& bind(int index, std::string_view value);
  Stmt& bind(int index, std::optional<std::string_view> value);  // nullopt binds NULL
  Stmt& bind_null(int index);
  Stmt& bind_blob(int index, std::string_view bytes);  // binary: no text conversion

  // Advances to the next row: true while a row is available, false when done.
  bool step();
  // Runs a statement that returns no rows (or whose rows are irrelevant).
  void run();
  void reset() noexcept;

  bool is_null(int column) const;
  std::int64_t int64(int column) const;
  std::string text(int column) const;       // "" for NULL
  std::string_view view(int column) const;  // valid until the next step/reset
  std::optional<std::string> opt_text(int column) const;
  std::optional<std::int64_t> opt_int64(int column) const;
  std::string blob(int column) const;  // the bytes of a BLOB column ("" for NULL)

  sqlite3_stmt* handle() const noexcept { return stmt_; }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// A borrowed cached statement that is reset when the borrow ends, so a half-read result
// never keeps a read transaction (and thus an old WAL snapshot) open past its call (§6.8).
class Query {
 public:
  explicit Query(Stmt& stmt) : stmt_(&stmt) {}
  ~Query() { stmt_->reset(); }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;
  Stmt* operator->() const noexcept { return stmt_; }
  Stmt& operator*() const noexcept { return *stmt_; }

 private:
  Stmt* stmt_;
};

class Db {
 public:
  Db(const std::filesystem::path& file, bool read_only);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Runs one or more statements with no parameters (schema, PRAGMAs, BEGIN/COMMIT).
  void exec(const char* sql);
  // A statement prepared once per connection and reused; the SQL text is the cache key.
  Query query(std::string_view sql) { return Query(statement(sql)); }
  // The cached statement itself, for callers that keep it stepping across calls (listing
  // cursors) and reset it themselves.
  Stmt& statement(std::string_view sql);
  std::int64_t changes() const noexcept;
  // Whether a transaction is open (SQLite ends one by itself on some errors, e.g. disk full).
  bool in_transaction() const noexcept;
  sqlite3* handle() const noexcept { return db_; }

 private:
  sqlite3* db_ = nullptr;
  std::unordered_map<std::string, std::unique_ptr<Stmt>> cache_;
};

// BEGIN IMMEDIATE (writer: takes the write lock up front, §6.8) or BEGIN (reader: one WAL
// snapshot from the first read to commit). Rolls back unless committed.
class Transaction {
 public:
  enum class Kind { read, write };
  Transaction(Db& db, Kind kind);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  Db* db_;
  bool open_ = true;
};

}  // namespace tfork::store::sqlite
