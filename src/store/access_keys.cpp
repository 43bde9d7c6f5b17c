// SPDX-License-Identifier: Apache-2.0
// Access keys with per-bucket roles (server-design.md §6.9, tigris-wire.md §3).

#include "tfork/crypto/hash.hpp"

#include "sqlite_store.hpp"

namespace tfork::store {

namespace {

std::string_view role_name(Role role) {
  switch (role) {
    case Role::editor:
      return "Editor";
    case Role::read_only:
      return "ReadOnly";
    case Role::namespace_admin:
      return "NamespaceAdmin";
  }
  return "ReadOnly";
}

Role role_from(std::string_view name) {
  if (name == "Editor") return Role::editor;
  if (name == "NamespaceAdmin") return Role::namespace_admin;
  return Role::read_only;
}

std::unexpected<StoreError> no_key(std::string_view id) {
  return failure(StoreErrc::no_such_access_key, "no such access key " + std::string(id));
}

bool key_exists(sqlite::Db& db, std::string_view id) {
  return db.query("SELECT 1 FROM access_keys WHERE id=?1")->bind(1, id).step();
}

// Full replacement of a key's roles (UpdateAccessKeyWithBucketsRole semantics, §3.3). A role
// names the bucket's immutable id, taken now: a grant on a name that has no bucket yet, or
// whose bucket is later deleted, never reaches a bucket created under that name afterwards.
void write_roles(sqlite::Db& db, std::string_view id, const std::vector<BucketRole>& roles) {
  db.query("DELETE FROM key_roles WHERE key_id=?1")->bind(1, id).run();
  for (const auto& role : roles) {
    std::optional<std::int64_t> bucket_id;
    if (role.bucket != "*") {
      auto q = db.query("SELECT id FROM buckets WHERE name=?1 AND state=0");
      if (q->bind(1, std::string_view(role.bucket)).step()) bucket_id = q->int64(0);
    }
    auto insert = db.query(
        "INSERT OR REPLACE INTO key_roles(key_id, bucket, role, bucket_id) "
        "VALUES(?1, ?2, ?3, ?4)");
    insert->bind(1, id).bind(2, std::string_view(role.bucket)).bind(3, role_name(role.role));
    if (bucket_id)
      insert->bind(4, *bucket_id);
    else
      insert->bind_null(4);
    insert->run();
  }
}

// The roles that still reach a live bucket: "*", or the very bucket that was granted.
std::vector<BucketRole> read_roles(sqlite::Db& db, std::string_view id) {
  std::vector<BucketRole> roles;
  auto q = db.query(
      "SELECT bucket, role FROM key_roles WHERE key_id=?1 AND (bucket='*' OR bucket_id IN "
      "(SELECT id FROM buckets WHERE buckets.name=key_roles.bucket AND state=0)) "
      "ORDER BY bucket");
  q->bind(1, id);
  while (q->step())
    roles.push_back(BucketRole{q->text(0), role_from(q->view(1))});
  return roles;
}

bool valid_roles(const std::vector<BucketRole>& roles) {
  for (const auto& role : roles) {
    if (role.bucket.empty()) return false;
  }
  return true;
}

}  // namespace

Result<AccessKey> SqliteStore::create_access_key(std::string_view name,
                                                 std::vector<BucketRole> roles) {
  if (!valid_roles(roles)) return failure(StoreErrc::invalid_argument, "a role names no bucket");
  return write([&](WriteCtx& ctx) -> Result<AccessKey> {
    AccessKey key;
    // tigris-wire §3.1: tid_/tsec_ prefixes; the random parts come from the OS CSPRNG.
    key.id = "tid_" + crypto::random_alnum(24);
    key.secret = "tsec_" + crypto::random_alnum(48);
    key.name = std::string(name);
    key.active = true;
    key.created = now_ns();
    ctx.db
        .query(
            "INSERT INTO access_keys(id, secret, name, active, created) VALUES(?1, ?2, ?3, 1, ?4)")
        ->bind(1, std::string_view(key.id))
        .bind(2, std::string_view(key.secret))
        .bind(3, name)
        .bind(4, key.created)
        .run();
    write_roles(ctx.db, key.id, roles);
    key.roles = read_roles(ctx.db, key.id);
    return key;
  });
}

Result<AccessKey> SqliteStore::get_access_key(std::string_view id) {
  return read([&](sqlite::Db& db) -> Result<AccessKey> {
    AccessKey key;
    {
      auto q = db.query("SELECT id, secret, name, active, created FROM access_keys WHERE id=?1");
      if (!q->bind(1, id).step()) return no_key(id);
      key = AccessKey{q->text(0), q->text(1), q->text(2), q->int64(3) != 0, q->int64(4), {}};
    }
    key.roles = read_roles(db, key.id);
    return key;
  });
}

Result<std::vector<AccessKey>> SqliteStore::list_access_keys() {
  return read([&](sqlite::Db& db) -> Result<std::vector<AccessKey>> {
    std::vector<AccessKey> keys;
    {
      auto q = db.query(
          "SELECT id, secret, name, active, created FROM access_keys ORDER BY created, id");
      while (q->step()) {
        keys.push_back(
            AccessKey{q->text(0), q->text(1), q->text(2), q->int64(3) != 0, q->int64(4), {}});
      }
    }
    for (auto& key : keys)
      key.roles = read_roles(db, key.id);
    return keys;
  });
}

Result<void> SqliteStore::delete_access_key(std::string_view id) {
  return write([&](WriteCtx& ctx) -> Result<void> {
    if (!key_exists(ctx.db, id)) return no_key(id);
    ctx.db.query("DELETE FROM key_roles WHERE key_id=?1")->bind(1, id).run();
    ctx.db.query("DELETE FROM access_keys WHERE id=?1")->bind(1, id).run();
    return {};
  });
}

Result<void> SqliteStore::update_access_key_roles(std::string_view id,
                                                  std::vector<BucketRole> roles) {
  if (!valid_roles(roles)) return failure(StoreErrc::invalid_argument, "a role names no bucket");
  return write([&](WriteCtx& ctx) -> Result<void> {
    if (!key_exists(ctx.db, id)) return no_key(id);
    write_roles(ctx.db, id, roles);
    return {};
  });
}

Result<AccessKey> SqliteStore::rotate_access_key(std::string_view id) {
  return write([&](WriteCtx& ctx) -> Result<AccessKey> {
    AccessKey key;
    {
      auto q =
          ctx.db.query("SELECT id, secret, name, active, created FROM access_keys WHERE id=?1");
      if (!q->bind(1, id).step()) return no_key(id);
      key = AccessKey{q->text(0), q->text(1), q->text(2), q->int64(3) != 0, q->int64(4), {}};
    }
    key.secret = "tsec_" + crypto::random_alnum(48);
    ctx.db.query("UPDATE access_keys SET secret=?2 WHERE id=?1")
        ->bind(1, id)
        .bind(2, std::string_view(key.secret))
        .run();
    key.roles = read_roles(ctx.db, key.id);
    return key;
  });
}

}  // namespace tfork::store
