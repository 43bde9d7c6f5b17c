// SPDX-License-Identifier: Apache-2.0
#pragma once
// Typed errors shared by every layer. Code branches on `kind`, never on message text;
// cli::run alone maps kinds to the exit codes of cli.md §6 (src/cli/root.cpp).

#include <stdexcept>
#include <string>
#include <string_view>

namespace tfork {

enum class ErrorKind {
  other,        // exit 1
  auth,         // exit 2: AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch, no credentials
  not_found,    // exit 3: NoSuchBucket, unknown snapshot
  throttled,    // exit 4: SlowDown / 429 / 503 after retries
  network,      // exit 5: DNS, connect, TLS, read timeout
  conflict,     // exit 6: bucket exists, not empty, has forks
  partial,      // exit 7: some items of a batch failed
  usage,        // exit 64: bad flag, bad name (before anything is sent)
  interrupted,  // exit 130: SIGINT
  terminated,   // exit 143: SIGTERM (CI cancels with it)
};

// The exit code of cli.md §6 for an error kind.
int exit_code(ErrorKind kind);

// A stable snake_case name for the kind ("not_found"), used in JSON error documents.
std::string_view kind_name(ErrorKind kind);

struct Error {
  ErrorKind kind = ErrorKind::other;
  std::string code;        // the server's code ("NoSuchBucket") or ours ("InvalidBucketName")
  std::string message;     // one line, never a secret
  int http_status = 0;     // 0 when no HTTP response was received
  std::string request_id;  // x-amz-request-id or the RequestId element, when known
};

// Maps an S3 / IAM error code plus HTTP status to a kind.
ErrorKind kind_for_service_error(std::string_view code, int http_status);

// "Already gone": the answer to a delete (or to the HeadBucket before one) that says the thing
// no longer exists, which an idempotent delete counts as done. One predicate per family,
// because "missing" means different things: for a snapshot, a missing bucket is a failure
// (exit 3), not a deleted snapshot. Every command and workflow that deletes asks these.
// A bucket (DeleteBucket, HeadBucket): NoSuchBucket, or a 404 without a more specific code.
bool bucket_gone(const Error& error);
// An access key (DeleteAccessKey): NoSuchEntity (as the code, or in the text), or a 404
// without a more specific code.
bool key_gone(const Error& error);
// A snapshot (DeleteBucketSnapshot): NoSuchSnapshot only.
bool snapshot_gone(const Error& error);

// The exception that carries an Error to the top-level catch.
class TforkError : public std::runtime_error {
 public:
  explicit TforkError(Error error) : std::runtime_error(error.message), error_(std::move(error)) {}
  TforkError(ErrorKind kind, std::string code, std::string message)
      : TforkError(Error{kind, std::move(code), std::move(message), 0, {}}) {}
  const Error& error() const noexcept { return error_; }

 private:
  Error error_;
};

// The one usage error (exit 64, cli.md §6): a bad flag or value, found before anything is
// sent. Throws TforkError(usage, "UsageError") with the one-line `message`.
[[noreturn]] void usage_error(std::string message);

}  // namespace tfork
