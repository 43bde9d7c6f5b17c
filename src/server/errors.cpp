// SPDX-License-Identifier: Apache-2.0
#include "tfork/server/errors.hpp"

namespace tfork::server {

const ErrorSpec& spec(Err id) {
  return k_error_table[static_cast<std::size_t>(id)];
}

// The store's errors in S3 terms. Unconfirmed choices are annotated in k_error_table.
Err from_store(store::StoreErrc code) {
  switch (code) {
    case store::StoreErrc::no_such_bucket:
      return Err::no_such_bucket;
    case store::StoreErrc::bucket_exists:
      return Err::bucket_already_owned;
    case store::StoreErrc::bucket_not_empty:
      return Err::bucket_not_empty;
    case store::StoreErrc::bucket_has_forks:
      return Err::bucket_has_forks;
    case store::StoreErrc::not_snapshot_enabled:
      return Err::not_snapshot_enabled;
    case store::StoreErrc::no_such_snapshot:
      return Err::no_such_snapshot;
    case store::StoreErrc::no_such_key:
      return Err::no_such_key;
    case store::StoreErrc::no_such_upload:
      return Err::no_such_upload;
    case store::StoreErrc::invalid_part:
      return Err::invalid_part;
    case store::StoreErrc::invalid_part_order:
      return Err::invalid_part_order;
    case store::StoreErrc::no_such_access_key:
      return Err::no_such_entity;
    case store::StoreErrc::precondition_failed:
      return Err::precondition_failed;
    case store::StoreErrc::invalid_argument:
      return Err::invalid_argument;
    case store::StoreErrc::no_space:
      return Err::insufficient_storage;
    case store::StoreErrc::io:
      return Err::internal_error;
  }
  return Err::internal_error;
}

S3Error make_error(Err id, std::string message) {
  S3Error error;
  error.id = id;
  error.message = std::move(message);
  return error;
}

S3Error store_error(const store::StoreError& error, std::string bucket, std::string key) {
  S3Error out;
  out.id = from_store(error.code);
  // Server-side failures keep their detail (paths, SQLite's words) in the log, not in the
  // response.
  if (out.status() >= 500) {
    out.detail = error.message;
  } else {
    out.message = error.message;
  }
  out.bucket = std::move(bucket);
  out.key = std::move(key);
  return out;
}

void fail(Err id, std::string message) {
  throw S3Exception(make_error(id, std::move(message)));
}
void fail(S3Error error) {
  throw S3Exception(std::move(error));
}

}  // namespace tfork::server
