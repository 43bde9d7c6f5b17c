// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal to the handler: one request's Call (what an operation is given) and one
// function per operation, split into files by concept (bucket_ops, object_ops,
// multipart_ops, listing_ops, iam_ops).
// Operations throw S3Exception (errors.hpp); Handler::run turns it into an error body.

#include "tfork/rules/bucket_name.hpp"
#include "tfork/server/auth.hpp"
#include "tfork/server/body.hpp"
#include "tfork/server/errors.hpp"
#include "tfork/server/handler.hpp"
#include "tfork/server/http_types.hpp"
#include "tfork/server/payload.hpp"
#include "tfork/server/principal.hpp"
#include "tfork/server/target.hpp"
#include "tfork/server/variance.hpp"
#include "tfork/store/store.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace tfork::server {

// What an operation is given: the admitted request, its target, the verified body, who sent
// it and the store. (cli::Context is the client side's, a different thing.)
struct Call {
  const Request& request;
  const Target& target;
  store::Store& store;
  Principal principal;
  DecodedBody body;           // de-framed and verified
  store::Metadata checksums;  // verified x-amz-checksum-* values of the body
  std::chrono::system_clock::time_point now;
  Variance& variance;  // serve --quirks / --consistency-delay (variance.hpp)
  // Every key's secret and principal, root's too (presigning on behalf of a key needs them).
  const KeyLookup* keys = nullptr;

  bool is_head() const { return request.method == "HEAD"; }
  const std::string* header(std::string_view name) const { return request.header(name); }
  bool wants_json() const;  // Accept: application/json
};

// Unwraps a store result or throws the mapped S3 error (naming the bucket and key).
template <class T>
T check(store::Result<T> result, std::string_view bucket = {}, std::string_view key = {}) {
  if (!result)
    throw S3Exception(store_error(result.error(), std::string(bucket), std::string(key)));
  if constexpr (!std::is_void_v<T>) return std::move(*result);
}

// Throws AccessDenied unless allowed (principal.hpp).
void require(const Call& call, std::string_view bucket, Access access);

// X-Tigris-Snapshot-Version as a Seq (400 InvalidArgument when not a decimal ns timestamp).
std::optional<store::Seq> snapshot_version(const Call& call);
std::optional<store::Seq> parse_seq(std::string_view text);

Response xml_response(int status, std::string body);
Response json_response(int status, std::string body);

// ---- buckets (bucket_ops.cpp)
Response list_buckets(Call& call);
Response create_bucket(Call& call);  // plain, snapshot-enabled, snapshot, fork
Response head_bucket(Call& call);
Response delete_bucket(Call& call);    // bucket (plain/force) or one snapshot
Response bucket_metadata(Call& call);  // GET /<b>?metadata (JSON)
Response patch_bucket(Call& call);     // PATCH /<b> {"type":0|1}
Response bucket_location(Call& call);
Response bucket_versioning(Call& call);

// ---- listing (listing_ops.cpp)
Response list_objects(Call& call, int version);
Response list_object_versions(Call& call);  // GET /<b>?versions

// The request body moved (a streamed file) or written (in memory) into the blob store, with
// its ETag (md5 hex). Call only once the operation cannot fail for other reasons, so that a
// refused request leaves no blob behind.
struct StoredBody {
  store::BlobRef blob;
  std::string etag;
};
StoredBody store_body(Call& call);

// ---- objects (object_ops.cpp)
// Prepares the write and leaves it to Handler::commit; put_written answers it once done.
PendingWrite put_object(Call& call);
Response put_written(const store::ObjectInfo& info);
Response get_object(Call& call);  // GET and HEAD
Response get_object_tagging(Call& call);
Response delete_object(Call& call);
Response delete_objects(Call& call);
Response copy_object(Call& call);
Response get_object_attributes(Call& call);  // GET /<b>/<k>?attributes

// Conditional writes of PutObject, CompleteMultipartUpload and CopyObject: If-None-Match: *
// (create only) and If-Match: <etag> (replace only that version), as the store write carries
// them: the store evaluates them in the write's own transaction (412 PreconditionFailed, 404
// NoSuchKey for If-Match on a missing key), so two racing writers cannot both pass.
store::WriteConditions write_conditions(const Call& call);
// The same rule against the key's current version, read before the write: refuses early, so
// a write that already cannot pass stores no body. The write's own check is the one that
// counts.
void check_write_conditions(const Call& call, const store::WriteConditions& conditions);

// x-amz-copy-source of CopyObject and UploadPartCopy.
struct CopySource {
  std::string bucket;
  std::string key;
  std::optional<store::Seq> version;
};
CopySource parse_copy_source(const Call& call);

// ---- multipart (multipart_ops.cpp)
Response create_multipart_upload(Call& call);
Response upload_part(Call& call);
Response complete_multipart_upload(Call& call);
Response abort_multipart_upload(Call& call);
Response list_parts(Call& call);
Response list_multipart_uploads(Call& call);  // GET /<b>?uploads

// S3's smallest part: every part of a completed upload but the last is at least this big.
inline constexpr std::int64_t k_min_part_size = std::int64_t{5} << 20;

// ---- Tigris JSON functions on the service root (presign_ops.cpp)
// POST /?func=presign {"bucket","key","key_id","type":"get"|"put","expires_in"} -> {"url"}:
// the server signs a URL with the named key's secret (tigris-wire §2.9; the Tigris CLI's
// `presign`).
Response presign(Call& call);

// ---- IAM (iam_ops.cpp)
// Whether the request is an IAM call (POST / with Action in the query or form body, or
// ?Detailed), tigris-wire §3.2.
bool is_iam_request(const Request& request, const Target& target, std::string_view body);
Response iam_dispatch(Call& call);

// Validation shared by the operations.
inline constexpr std::size_t k_max_key_bytes = 1024;
void check_key(const Call& call);  // 400 KeyTooLongError
// tigris-wire §2.1, the client's rule too (tfork/rules/bucket_name.hpp).
inline bool valid_bucket_name(std::string_view name) {
  return !rules::bucket_name_problem(name);
}

}  // namespace tfork::server
