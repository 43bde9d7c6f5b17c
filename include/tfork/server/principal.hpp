// SPDX-License-Identifier: Apache-2.0
#pragma once
// Who is asking, and what they may do (server-design.md §6.9, tigris-wire.md §2.3, §3.1).
// The permission model lives here and nowhere else.

#include "tfork/store/store.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace tfork::server {

struct Principal {
  std::string access_key_id;
  bool root = false;
  std::vector<store::BucketRole> roles;
};

enum class Access {
  read,             // Get/Head/List objects, HeadBucket, reads at a snapshot version
  write,            // Put/Copy (destination)/Delete objects, DeleteObjects, multipart
  snapshot,         // take and list snapshots, fork from the bucket, list its forks
  snapshot_delete,  // delete one snapshot
  bucket_admin,     // DeleteBucket, PATCH bucket settings
  mint_key,         // CreateAccessKeyWithBucketsRole for this bucket
};

// Root, or a NamespaceAdmin role on "*".
bool is_admin(const Principal& principal);

// Whether the principal may do `access` on `bucket`:
//  - admin: everything;
//  - ReadOnly: read, snapshot (tigris-wire §2.3: snapshot and fork operations are allowed to
//    keys with ReadOnly or Editor on the bucket);
//  - Editor: everything on that bucket (tigris-wire §3.1: Editor may Put/Copy/Delete, run
//    multipart, PutBucket and DeleteBucket; §3.1 / 3P: it may mint keys for its bucket).
// Creating a plain bucket, listing all keys and changing roles are admin-only.
bool allowed(const Principal& principal, std::string_view bucket, Access access);

// Whether the principal has any role on the bucket (ListBuckets shows only those, §6.9).
bool has_any_role(const Principal& principal, std::string_view bucket);

}  // namespace tfork::server
