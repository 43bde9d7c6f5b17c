// SPDX-License-Identifier: Apache-2.0
#pragma once
// Every error the server answers with: one enum, one table of (HTTP status, S3 code, default
// message). Choices Tigris has not confirmed (tigris-wire.md §9) live in this table and
// nowhere else, so they are easy to change when the real answers are known.

#include "tfork/server/http_types.hpp"
#include "tfork/store/store.hpp"

#include <array>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfork::server {

enum class Err {
  // authentication (server-design.md §5.2)
  access_denied,
  request_expired,
  invalid_access_key_id,
  signature_does_not_match,
  authorization_header_malformed,
  authorization_query_malformed,
  missing_content_sha256,
  request_time_too_skewed,
  content_sha256_mismatch,
  invalid_content_sha256,
  // integrity (server-design.md §5.4, §6.6)
  bad_digest,
  invalid_digest,
  invalid_checksum,
  incomplete_body,
  invalid_chunk,
  // request shape
  invalid_uri,
  invalid_argument,
  invalid_request,
  malformed_xml,
  key_too_long,
  invalid_bucket_name,
  invalid_range,
  invalid_token,
  method_not_allowed,
  not_implemented,
  precondition_failed,
  not_modified,
  entity_too_large,
  entity_too_small,
  max_message_length_exceeded,
  request_timeout,
  // resources
  no_such_bucket,
  no_such_key,
  no_such_version,
  no_such_upload,
  no_such_snapshot,
  bucket_already_owned,
  bucket_already_exists,
  bucket_not_empty,
  bucket_has_forks,
  bucket_has_children,
  operation_aborted,
  not_snapshot_enabled,
  snapshot_read_only,
  invalid_part,
  invalid_part_order,
  invalid_part_number,
  // IAM (tigris-wire.md §3)
  no_such_entity,
  invalid_action,
  // server
  insufficient_storage,
  slow_down,
  internal_error,
};

struct ErrorSpec {
  Err id;
  int status;
  std::string_view code;
  std::string_view message;  // the default message
};

// In enum order (a unit test checks this).
inline constexpr std::array k_error_table = {
    ErrorSpec{Err::access_denied, 403, "AccessDenied", "Access Denied"},
    ErrorSpec{Err::request_expired, 403, "AccessDenied", "Request has expired"},
    ErrorSpec{Err::invalid_access_key_id, 403, "InvalidAccessKeyId",
              "The AWS Access Key Id you provided does not exist in our records."},
    ErrorSpec{Err::signature_does_not_match, 403, "SignatureDoesNotMatch",
              "The request signature we calculated does not match the signature you provided. "
              "Check your key and signing method."},
    ErrorSpec{Err::authorization_header_malformed, 400, "AuthorizationHeaderMalformed",
              "The authorization header is malformed."},
    ErrorSpec{Err::authorization_query_malformed, 400, "AuthorizationQueryParametersError",
              "The presigned URL's X-Amz-* query parameters are malformed."},
    // Real S3 (and s3rver) answer a SigV4 request without x-amz-content-sha256 like this
    // (server-design.md §1.2, "curl 7.88 gap").
    ErrorSpec{Err::missing_content_sha256, 400, "InvalidRequest",
              "Missing required header for this request: x-amz-content-sha256"},
    ErrorSpec{Err::request_time_too_skewed, 403, "RequestTimeTooSkewed",
              "The difference between the request time and the current time is too large."},
    ErrorSpec{Err::content_sha256_mismatch, 400, "XAmzContentSHA256Mismatch",
              "The provided 'x-amz-content-sha256' header does not match what was computed."},
    ErrorSpec{Err::invalid_content_sha256, 400, "InvalidArgument",
              "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-* or a SHA-256 value."},
    ErrorSpec{Err::bad_digest, 400, "BadDigest",
              "The Content-MD5 or checksum you specified did not match what we received."},
    ErrorSpec{Err::invalid_digest, 400, "InvalidDigest",
              "The Content-MD5 you specified is not valid."},
    ErrorSpec{Err::invalid_checksum, 400, "InvalidRequest",
              "Value for x-amz-checksum-* header is invalid."},
    ErrorSpec{Err::incomplete_body, 400, "IncompleteBody",
              "You did not provide the number of bytes specified by the Content-Length HTTP "
              "header."},
    ErrorSpec{Err::invalid_chunk, 400, "InvalidChunkSizeError",
              "The aws-chunked body is malformed."},
    ErrorSpec{Err::invalid_uri, 400, "InvalidURI", "Couldn't parse the specified URI."},
    ErrorSpec{Err::invalid_argument, 400, "InvalidArgument", "Invalid Argument"},
    ErrorSpec{Err::invalid_request, 400, "InvalidRequest", "Invalid Request"},
    ErrorSpec{Err::malformed_xml, 400, "MalformedXML",
              "The XML you provided was not well-formed or did not validate against our "
              "published schema."},
    ErrorSpec{Err::key_too_long, 400, "KeyTooLongError", "Your key is too long"},
    ErrorSpec{Err::invalid_bucket_name, 400, "InvalidBucketName",
              "The specified bucket is not valid."},
    ErrorSpec{Err::invalid_range, 416, "InvalidRange", "The requested range is not satisfiable"},
    ErrorSpec{Err::invalid_token, 400, "InvalidArgument",
              "The continuation token provided is incorrect"},
    ErrorSpec{Err::method_not_allowed, 405, "MethodNotAllowed",
              "The specified method is not allowed against this resource."},
    ErrorSpec{Err::not_implemented, 501, "NotImplemented",
              "A header or query you provided implies functionality that is not implemented."},
    ErrorSpec{Err::precondition_failed, 412, "PreconditionFailed",
              "At least one of the pre-conditions you specified did not hold"},
    ErrorSpec{Err::not_modified, 304, "NotModified", "Not Modified"},
    ErrorSpec{Err::entity_too_large, 400, "EntityTooLarge",
              "Your proposed upload exceeds the maximum allowed size"},
    ErrorSpec{Err::entity_too_small, 400, "EntityTooSmall",
              "Your proposed upload is smaller than the minimum allowed object size."},
    ErrorSpec{Err::max_message_length_exceeded, 400, "MaxMessageLengthExceeded",
              "Your request was too big."},
    ErrorSpec{Err::request_timeout, 400, "RequestTimeout",
              "Your socket connection to the server was not read from or written to within the "
              "timeout period."},
    ErrorSpec{Err::no_such_bucket, 404, "NoSuchBucket", "The specified bucket does not exist"},
    ErrorSpec{Err::no_such_key, 404, "NoSuchKey", "The specified key does not exist."},
    ErrorSpec{Err::no_such_version, 404, "NoSuchVersion", "The specified version does not exist."},
    ErrorSpec{Err::no_such_upload, 404, "NoSuchUpload",
              "The specified multipart upload does not exist."},
    // UNCONFIRMED (tigris-wire §9: "deleting an unknown snapshot version [404 or 400]").
    ErrorSpec{Err::no_such_snapshot, 404, "NoSuchSnapshot",
              "The specified snapshot does not exist."},
    // UNCONFIRMED (tigris-wire §2.1, §9: an existing name or fork name, 409
    // BucketAlreadyExists / BucketAlreadyOwnedByYou). One tenant owns every bucket here, so
    // root and anyone with a role on the bucket get BucketAlreadyOwnedByYou (server-design
    // §5.3: the non-us-east-1 S3 rule).
    ErrorSpec{Err::bucket_already_owned, 409, "BucketAlreadyOwnedByYou",
              "Your previous request to create the named bucket succeeded and you already own "
              "it."},
    ErrorSpec{Err::bucket_already_exists, 409, "BucketAlreadyExists",
              "The requested bucket name is not available."},
    ErrorSpec{Err::bucket_not_empty, 409, "BucketNotEmpty",
              "The bucket you tried to delete is not empty"},
    // UNCONFIRMED (tigris-wire §2.10, §9: deleting a parent that has forks [409]). A code of
    // its own, so clients can tell "delete the forks first" from "not empty"; tfork's own
    // client maps it to the conflict exit code.
    ErrorSpec{Err::bucket_has_forks, 409, "BucketHasForks",
              "The bucket has forks; delete the forks first."},
    // `serve --quirks parent-delete-400`: the same refusal as a gateway that answers it with
    // a 400 and a code of its own (tigris-wire §9 leaves the real answer open).
    ErrorSpec{Err::bucket_has_children, 400, "BucketHasChildren",
              "The bucket has child forks and cannot be deleted."},
    // `serve --quirks fork-conflict-409`: a conflicting concurrent operation (S3's code).
    ErrorSpec{Err::operation_aborted, 409, "OperationAborted",
              "A conflicting conditional operation is currently in progress against this "
              "resource. Please try again."},
    // UNCONFIRMED (tigris-wire §9: a snapshot on a non-snapshot bucket, or a fork of one,
    // [400 InvalidRequest]).
    ErrorSpec{Err::not_snapshot_enabled, 400, "InvalidRequest",
              "The bucket does not have snapshots enabled."},
    // tigris-wire §2.9: "snapshots are read-only"; the code is our choice.
    ErrorSpec{Err::snapshot_read_only, 400, "InvalidRequest",
              "X-Tigris-Snapshot-Version is only allowed on reads; snapshots are read-only."},
    ErrorSpec{Err::invalid_part, 400, "InvalidPart",
              "One or more of the specified parts could not be found."},
    ErrorSpec{Err::invalid_part_order, 400, "InvalidPartOrder",
              "The list of parts was not in ascending order."},
    ErrorSpec{Err::invalid_part_number, 416, "InvalidPartNumber",
              "The requested partnumber is not satisfiable"},
    // tigris-wire §1.5, §3.3: a missing key is 404 with NoSuchEntity in the body.
    ErrorSpec{Err::no_such_entity, 404, "NoSuchEntity", "The access key does not exist."},
    ErrorSpec{Err::invalid_action, 400, "InvalidAction",
              "The action or operation requested is not valid."},
    // No S3 code exists for a full disk; MinIO answers 507 (WebDAV's Insufficient Storage).
    ErrorSpec{Err::insufficient_storage, 507, "InsufficientStorage",
              "The server has no space left to store this request; try again later."},
    ErrorSpec{Err::slow_down, 503, "SlowDown", "Please reduce your request rate."},
    ErrorSpec{Err::internal_error, 500, "InternalError",
              "We encountered an internal error. Please try again."},
};

const ErrorSpec& spec(Err id);

// The error for a store failure. bucket_exists maps to bucket_already_owned; callers that
// know the caller does not own the bucket use bucket_already_exists instead.
Err from_store(store::StoreErrc code);

// An error on its way to the client.
struct S3Error {
  Err id = Err::internal_error;
  std::string message;          // empty: the table's default
  std::string bucket;           // <BucketName>, when relevant
  std::string key;              // <Key>, when relevant
  std::vector<Header> headers;  // extra response headers (e.g. Content-Range on 416)
  std::string detail;           // the cause of a server-side failure: logged, never sent

  int status() const { return spec(id).status; }
  std::string_view code() const { return spec(id).code; }
  std::string_view text() const { return message.empty() ? spec(id).message : message; }
};

S3Error make_error(Err id, std::string message = {});
S3Error store_error(const store::StoreError& error, std::string bucket = {}, std::string key = {});

// Thrown inside operations and caught once in Handler::handle (server/handler.cpp).
class S3Exception : public std::exception {
 public:
  explicit S3Exception(S3Error error) : error_(std::move(error)) {}
  const S3Error& error() const noexcept { return error_; }
  const char* what() const noexcept override { return "S3 error"; }

 private:
  S3Error error_;
};

[[noreturn]] void fail(Err id, std::string message = {});
[[noreturn]] void fail(S3Error error);

}  // namespace tfork::server
