// SPDX-License-Identifier: Apache-2.0
#include "sqlite.hpp"

namespace tfork::store::sqlite {

namespace {

[[noreturn]] void fail(sqlite3* db, int rc, std::string_view context) {
  std::string message(context);
  message += ": ";
  message += db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  throw DbError(rc, message);
}

}  // namespace

Stmt::Stmt(sqlite3* db, std::string_view sql) : db_(db) {
  const int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  if (rc != SQLITE_OK) fail(db, rc, std::string("prepare ") + std::string(sql));
}

Stmt::~Stmt() {
  sqlite3_finalize(stmt_);
}

Stmt& Stmt::bind(int index, std::int64_t value) {
  const int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) fail(db_, rc, "bind");
  return *this;
}

Stmt& Stmt::bind(int index, std::string_view value) {
  // SQLITE_TRANSIENT: SQLite copies the bytes, so callers may pass temporaries.
  const int rc =
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) fail(db_, rc, "bind");
  return *this;
}

Stmt& Stmt::bind(int index, std::optional<std::string_view> value) {
  return value ? bind(index, *value) : bind_null(index);
}

Stmt& Stmt::bind_blob(int index, std::string_view bytes) {
  const int rc = sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) fail(db_, rc, "bind");
  return *this;
}

Stmt& Stmt::bind_null(int index) {
  const int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) fail(db_, rc, "bind");
  return *this;
}

bool Stmt::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail(db_, rc, "step");
}

void Stmt::run() {
  while (step()) {
  }
}

void Stmt::reset() noexcept {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Stmt::is_null(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

std::int64_t Stmt::int64(int column) const {
  return sqlite3_column_int64(stmt_, column);
}

std::string_view Stmt::view(int column) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  if (text == nullptr) return {};
  return {text, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column))};
}

std::string Stmt::blob(int column) const {
  const auto* bytes = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
  if (bytes == nullptr) return {};
  return {bytes, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column))};
}

std::string Stmt::text(int column) const {
  return std::string(view(column));
}

std::optional<std::string> Stmt::opt_text(int column) const {
  if (is_null(column)) return std::nullopt;
  return text(column);
}

std::optional<std::int64_t> Stmt::opt_int64(int column) const {
  if (is_null(column)) return std::nullopt;
  return int64(column);
}

Db::Db(const std::filesystem::path& file, bool read_only) {
  // NOMUTEX: a connection is only ever used by one thread at a time (the writer behind its
  // mutex, readers leased from a pool), so SQLite's own per-connection mutex is wasted work.
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(file.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throw DbError(rc, "open " + file.string() + ": " + message);
  }
  sqlite3_extended_result_codes(db_, 1);
  exec("PRAGMA busy_timeout=5000");
  if (read_only) exec("PRAGMA query_only=1");
}

Db::~Db() {
  cache_.clear();  // statements must be finalized before the connection closes
  sqlite3_close_v2(db_);
}

void Db::exec(const char* sql) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    std::string message = error != nullptr ? error : sqlite3_errstr(rc);
    sqlite3_free(error);
    throw DbError(rc, std::string("exec ") + sql + ": " + message);
  }
}

Stmt& Db::statement(std::string_view sql) {
  auto it = cache_.find(std::string(sql));
  if (it == cache_.end()) {
    it = cache_.emplace(std::string(sql), std::make_unique<Stmt>(db_, sql)).first;
  }
  return *it->second;
}

std::int64_t Db::changes() const noexcept {
  return sqlite3_changes64(db_);
}

bool Db::in_transaction() const noexcept {
  return sqlite3_get_autocommit(db_) == 0;
}

Transaction::Transaction(Db& db, Kind kind) : db_(&db) {
  db.exec(kind == Kind::write ? "BEGIN IMMEDIATE" : "BEGIN");
}

Transaction::~Transaction() {
  if (!open_) return;
  try {
    db_->exec("ROLLBACK");
  } catch (const DbError&) {
    // A failed COMMIT may already have rolled back; nothing more can be done here.
  }
}

void Transaction::commit() {
  db_->exec("COMMIT");
  open_ = false;
}

}  // namespace tfork::store::sqlite
