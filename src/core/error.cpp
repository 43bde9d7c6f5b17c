// SPDX-License-Identifier: Apache-2.0
#include "tfork/core/error.hpp"

namespace tfork {

int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::other:
      return 1;
    case ErrorKind::auth:
      return 2;
    case ErrorKind::not_found:
      return 3;
    case ErrorKind::throttled:
      return 4;
    case ErrorKind::network:
      return 5;
    case ErrorKind::conflict:
      return 6;
    case ErrorKind::partial:
      return 7;
    case ErrorKind::usage:
      return 64;
    case ErrorKind::interrupted:
      return 130;
    case ErrorKind::terminated:
      return 143;
  }
  return 1;
}

std::string_view kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::other:
      return "other";
    case ErrorKind::auth:
      return "auth";
    case ErrorKind::not_found:
      return "not_found";
    case ErrorKind::throttled:
      return "throttled";
    case ErrorKind::network:
      return "network";
    case ErrorKind::conflict:
      return "conflict";
    case ErrorKind::partial:
      return "partial";
    case ErrorKind::usage:
      return "usage";
    case ErrorKind::interrupted:
      return "interrupted";
    case ErrorKind::terminated:
      return "terminated";
  }
  return "other";
}

ErrorKind kind_for_service_error(std::string_view code, int http_status) {
  if (code == "AccessDenied" || code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" ||
      code == "RequestTimeTooSkewed" || code == "ExpiredToken" || code == "InvalidToken" ||
      code == "AuthorizationHeaderMalformed" || code == "MissingSecurityHeader" ||
      code == "InvalidClientTokenId")
    return ErrorKind::auth;
  if (code == "NoSuchBucket" || code == "NoSuchKey" || code == "NoSuchSnapshot" ||
      code == "NoSuchEntity" || code == "NoSuchUpload" || code == "NotFound")
    return ErrorKind::not_found;
  if (code == "SlowDown" || code == "Throttling" || code == "TooManyRequests" ||
      code == "RequestLimitExceeded")
    return ErrorKind::throttled;
  if (code == "BucketAlreadyExists" || code == "BucketAlreadyOwnedByYou" ||
      code == "BucketNotEmpty" || code == "BucketHasForks" || code == "OperationAborted" ||
      code == "EntityAlreadyExists")
    return ErrorKind::conflict;
  switch (http_status) {
    case 401:
    case 403:
      return ErrorKind::auth;
    case 404:
      return ErrorKind::not_found;
    case 409:
      return ErrorKind::conflict;
    case 429:
    case 503:
      return ErrorKind::throttled;
    default:
      return ErrorKind::other;
  }
}

namespace {
// A 404 whose code names nothing more specific (a HEAD has no body: "NotFound" or none).
bool bare_not_found(const Error& error) {
  return error.http_status == 404 && !error.code.starts_with("NoSuch");
}
}  // namespace

bool bucket_gone(const Error& error) {
  return error.code == "NoSuchBucket" || bare_not_found(error);
}

bool key_gone(const Error& error) {
  // Some IAM gateways put the code only inside the text ({"Message": "NoSuchEntity: ..."}).
  return error.code == "NoSuchEntity" || bare_not_found(error) ||
         error.message.find("NoSuchEntity") != std::string::npos;
}

bool snapshot_gone(const Error& error) {
  return error.code == "NoSuchSnapshot";
}

void usage_error(std::string message) {
  throw TforkError(ErrorKind::usage, "UsageError", std::move(message));
}

}  // namespace tfork
