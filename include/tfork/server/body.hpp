// SPDX-License-Identifier: Apache-2.0
#pragma once
// Request bodies received piece by piece, in bounded memory (issue 9 §1): the aws-chunked
// framing is removed as bytes arrive (chunk signatures checked chunk by chunk), object bodies
// go to a temporary file in the store's tmp_dir() with running digests, and every other body
// is kept in memory up to a small limit. The socket layer feeds what it reads; the pure
// Handler (tests) feeds a whole body at once, through the same code.

#include "tfork/crypto/hash.hpp"
#include "tfork/server/errors.hpp"
#include "tfork/server/http_types.hpp"
#include "tfork/store/store.hpp"

#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfork::server {

// S3's limits: one PutObject or UploadPart carries at most 5 GiB; XML and other control
// bodies are small, so 1 MiB bounds them (S3 answers MaxMessageLengthExceeded past that).
inline constexpr std::uint64_t k_max_object_body = std::uint64_t{5} << 30;
inline constexpr std::uint64_t k_max_control_body = std::uint64_t{1} << 20;

struct ChunkSigning {
  std::string signing_key;  // raw bytes
  std::string amz_date;
  std::string scope;
  std::string seed_signature;  // hex; each chunk's signature chains from the previous one
};

// A decoded body written to a temporary file, with the digests computed while it streamed.
// The file is removed when the BodyReceiver that wrote it is destroyed, unless it was moved
// into the blob store first (Store::adopt_blob renames it).
struct SpooledBody {
  std::filesystem::path path;
  std::int64_t size = 0;
  std::string sha256_hex;
  std::string md5;            // raw 16 bytes
  store::Metadata checksums;  // (algorithm, base64) for the algorithms asked for
};

struct DecodedBody {
  std::string data;                 // the body, when kept in memory
  std::vector<Header> trailers;     // names lowercased, values trimmed
  std::optional<SpooledBody> file;  // the body, when streamed to a file (data is empty)

  std::int64_t size() const { return file ? file->size : static_cast<std::int64_t>(data.size()); }
};

// Streams content into a new file in `dir` with a running SHA-256 and MD5 (and the CRCs or
// SHA-1 named in `checksums`), in bounded memory. Used for uploads and part copies.
class SpoolFile {
 public:
  SpoolFile(const std::filesystem::path& dir, std::vector<std::string> checksums);
  ~SpoolFile();  // removes the file unless release() handed it on and it was moved away
  SpoolFile(const SpoolFile&) = delete;
  SpoolFile& operator=(const SpoolFile&) = delete;

  // Errors: InsufficientStorage when the disk is full, InternalError for other I/O.
  std::expected<void, S3Error> write(std::string_view data);
  std::expected<SpooledBody, S3Error> finish();
  std::int64_t size() const { return size_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::int64_t size_ = 0;
  crypto::Digest sha256_{crypto::Digest::Algorithm::sha256};
  crypto::Digest md5_{crypto::Digest::Algorithm::md5};
  struct Running;
  std::vector<Running> running_;
};

// Removes aws-chunked framing incrementally: "<hex size>[;chunk-signature=<sig>]\r\n<data>
// \r\n" ... a zero-size chunk, then optional trailer lines and a blank line. With signing,
// every chunk signature (and x-amz-trailer-signature, if present) must verify.
class AwsChunkedDecoder {
 public:
  explicit AwsChunkedDecoder(std::optional<ChunkSigning> signing);
  ~AwsChunkedDecoder();
  AwsChunkedDecoder(const AwsChunkedDecoder&) = delete;
  AwsChunkedDecoder& operator=(const AwsChunkedDecoder&) = delete;

  // Decodes `wire`, passing chunk data to `sink` (which may fail, e.g. on a full disk).
  template <class Sink>
  std::expected<void, S3Error> feed(std::string_view wire, Sink&& sink) {
    while (!wire.empty()) {
      std::string_view data;
      if (auto step = advance(wire, data); !step) return step;
      if (!data.empty()) {
        if (auto written = sink(data); !written) return written;
      }
    }
    return {};
  }
  // The trailers, once the whole body was fed; IncompleteBody when it ended early.
  std::expected<std::vector<Header>, S3Error> finish();

 private:
  // Consumes a prefix of `wire`; `data` is chunk content found in it (possibly empty).
  std::expected<void, S3Error> advance(std::string_view& wire, std::string_view& data);
  std::expected<void, S3Error> end_chunk();

  enum class State { size_line, data, data_crlf, trailers, done };
  State state_ = State::size_line;
  std::optional<ChunkSigning> signing_;
  std::string previous_signature_;
  std::string line_;  // the size line or the trailer section being collected
  std::string chunk_signature_;
  std::uint64_t remaining_ = 0;
  bool last_chunk_ = false;
  std::optional<crypto::Digest> chunk_hash_;
};

// Where a body goes and what it must satisfy.
struct BodyPlan {
  // Object bodies (PutObject, UploadPart): kept in memory up to store::k_max_db_blob bytes,
  // then spooled to a file in tmp_dir. Other bodies are always kept in memory.
  bool to_file = false;
  std::uint64_t max_size = k_max_control_body;  // decoded bytes
  bool aws_chunked = false;
  std::optional<ChunkSigning> signing;        // aws-chunked with chunk signatures
  std::optional<std::string> sha256_hex;      // x-amz-content-sha256 to check (lowercase hex)
  std::optional<std::string> decoded_length;  // x-amz-decoded-content-length
  std::string announced_trailer;              // x-amz-trailer (lowercased), must arrive
  std::vector<std::string> checksums;         // algorithms to compute while streaming
  std::filesystem::path tmp_dir;              // for to_file
};

class BodyReceiver {
 public:
  explicit BodyReceiver(BodyPlan plan);
  ~BodyReceiver();
  BodyReceiver(const BodyReceiver&) = delete;
  BodyReceiver& operator=(const BodyReceiver&) = delete;

  // Wire bytes as they arrive (HTTP framing already removed).
  std::expected<void, S3Error> feed(std::string_view wire);
  std::expected<DecodedBody, S3Error> finish();

 private:
  std::expected<void, S3Error> take(std::string_view data);

  BodyPlan plan_;
  std::optional<AwsChunkedDecoder> decoder_;
  std::optional<SpoolFile> file_;
  std::string memory_;
  std::uint64_t size_ = 0;
  std::optional<crypto::Digest> sha256_;  // memory bodies with a claimed hash
};

// The algorithms of x-amz-checksum-* a request asks the server to verify (headers, or the
// trailer announced in x-amz-trailer): "crc32", "crc32c", "crc64nvme", "sha1", "sha256".
std::vector<std::string> requested_checksums(const Request& request);

}  // namespace tfork::server
