// SPDX-License-Identifier: Apache-2.0
#include "tfork/server/body.hpp"

#include "tfork/core/ascii.hpp"
#include "tfork/crypto/hash.hpp"
#include "tfork/server/auth.hpp"
#include "tfork/sigv4/signer.hpp"

#include <spdlog/spdlog.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace tfork::server {
namespace {

// A chunk-size line or a trailer section longer than this is not aws-chunked framing.
constexpr std::size_t k_max_size_line = 4096;
constexpr std::size_t k_max_trailers = 16 * 1024;

std::unexpected<S3Error> error(Err id, std::string message = {}) {
  return std::unexpected(make_error(id, std::move(message)));
}

constexpr std::array<std::string_view, 5> k_algorithms = {"crc32", "crc32c", "crc64nvme", "sha1",
                                                          "sha256"};

}  // namespace

// ---- SpoolFile

// One running x-amz-checksum-* computation.
struct SpoolFile::Running {
  std::string algorithm;
  std::uint64_t crc = 0;
  std::optional<crypto::Digest> digest;

  void update(std::string_view data) {
    if (algorithm == "crc32")
      crc = crypto::crc32(data, static_cast<std::uint32_t>(crc));
    else if (algorithm == "crc32c")
      crc = crypto::crc32c(data, static_cast<std::uint32_t>(crc));
    else if (algorithm == "crc64nvme")
      crc = crypto::crc64nvme(data, crc);
    else if (digest)
      digest->update(data);
  }
  std::string finish() {
    if (algorithm == "crc32" || algorithm == "crc32c")
      return crypto::base64_encode(crypto::big_endian(static_cast<std::uint32_t>(crc)));
    if (algorithm == "crc64nvme") return crypto::base64_encode(crypto::big_endian(crc));
    return crypto::base64_encode(digest->finish());
  }
};

SpoolFile::SpoolFile(const std::filesystem::path& dir, std::vector<std::string> checksums) {
  for (auto& algorithm : checksums) {
    Running running{std::move(algorithm), 0, std::nullopt};
    if (running.algorithm == "sha1") running.digest.emplace(crypto::Digest::Algorithm::sha1);
    if (running.algorithm == "sha256") running.digest.emplace(crypto::Digest::Algorithm::sha256);
    running_.push_back(std::move(running));
  }
  path_ = dir / ("upload-" + crypto::random_hex(12));
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd_ < 0) spdlog::error("cannot create {}: {}", path_.string(), std::strerror(errno));
}

SpoolFile::~SpoolFile() {
  if (fd_ >= 0) ::close(fd_);
  ::unlink(path_.c_str());  // ENOENT once adopted into the blob store
}

std::expected<void, S3Error> SpoolFile::write(std::string_view data) {
  if (fd_ < 0) return error(Err::internal_error, "The upload could not be stored.");
  sha256_.update(data);
  md5_.update(data);
  for (auto& running : running_)
    running.update(data);
  size_ += static_cast<std::int64_t>(data.size());
  while (!data.empty()) {
    const auto written = ::write(fd_, data.data(), data.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      const int code = errno;
      spdlog::error("writing {}: {}", path_.string(), std::strerror(code));
      if (code == ENOSPC || code == EDQUOT) return error(Err::insufficient_storage);
      return error(Err::internal_error, "The upload could not be stored.");
    }
    data.remove_prefix(static_cast<std::size_t>(written));
  }
  return {};
}

std::expected<SpooledBody, S3Error> SpoolFile::finish() {
  if (fd_ < 0) return error(Err::internal_error, "The upload could not be stored.");
  const int closed = ::close(fd_);
  fd_ = -1;
  if (closed != 0) {
    const int code = errno;
    spdlog::error("closing {}: {}", path_.string(), std::strerror(code));
    if (code == ENOSPC || code == EDQUOT) return error(Err::insufficient_storage);
    return error(Err::internal_error, "The upload could not be stored.");
  }
  SpooledBody out;
  out.path = path_;
  out.size = size_;
  out.sha256_hex = crypto::to_hex(sha256_.finish());
  out.md5 = md5_.finish();
  for (auto& running : running_)
    out.checksums.emplace_back(running.algorithm, running.finish());
  return out;
}

// ---- AwsChunkedDecoder

AwsChunkedDecoder::AwsChunkedDecoder(std::optional<ChunkSigning> signing)
    : signing_(std::move(signing)) {
  if (signing_) previous_signature_ = signing_->seed_signature;
}

AwsChunkedDecoder::~AwsChunkedDecoder() = default;

std::expected<void, S3Error> AwsChunkedDecoder::end_chunk() {
  if (!signing_) return {};
  // AWS sigv4-streaming: each chunk signs its hash and the previous signature.
  if (chunk_signature_.empty()) {
    return error(Err::signature_does_not_match, "A chunk signature is missing.");
  }
  const auto hash = crypto::to_hex(chunk_hash_->finish());
  chunk_hash_.reset();
  const auto to_sign =
      sigv4::chunk_string_to_sign(signing_->amz_date, signing_->scope, previous_signature_, hash);
  auto expected = sigv4::signature(signing_->signing_key, to_sign);
  if (!signatures_equal(expected, chunk_signature_)) {
    return error(Err::signature_does_not_match, "The chunk signature does not match the chunk.");
  }
  previous_signature_ = std::move(expected);
  return {};
}

std::expected<void, S3Error> AwsChunkedDecoder::advance(std::string_view& wire,
                                                        std::string_view& data) {
  data = {};
  switch (state_) {
    case State::size_line: {
      const auto newline = wire.find('\n');
      line_.append(wire.substr(0, newline == std::string_view::npos ? wire.size() : newline + 1));
      wire.remove_prefix(newline == std::string_view::npos ? wire.size() : newline + 1);
      if (line_.size() > k_max_size_line)
        return error(Err::invalid_chunk, "An aws-chunked chunk header is too long.");
      if (newline == std::string_view::npos) return {};
      if (line_.size() < 2 || line_[line_.size() - 2] != '\r')
        return error(Err::invalid_chunk, "A chunk header does not end with CRLF.");
      const std::string_view header(line_.data(), line_.size() - 2);
      const auto semi = header.find(';');
      const auto size_text = ascii::trim(header.substr(0, semi));
      std::uint64_t size = 0;
      const auto [end, ec] =
          std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
      if (size_text.empty() || size_text.size() > 15 || ec != std::errc{} ||
          end != size_text.data() + size_text.size()) {
        return error(Err::invalid_chunk, "Invalid aws-chunked chunk size.");
      }
      chunk_signature_.clear();
      if (semi != std::string_view::npos) {
        const auto extension = ascii::trim(header.substr(semi + 1));
        constexpr std::string_view k_prefix = "chunk-signature=";
        if (extension.starts_with(k_prefix))
          chunk_signature_ = ascii::lower(extension.substr(k_prefix.size()));
      }
      line_.clear();
      remaining_ = size;
      last_chunk_ = size == 0;
      if (signing_) chunk_hash_.emplace(crypto::Digest::Algorithm::sha256);
      state_ = State::data;
      if (size == 0) {
        if (auto ended = end_chunk(); !ended) return ended;
        state_ = State::trailers;
      }
      return {};
    }
    case State::data: {
      const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(remaining_, wire.size()));
      data = wire.substr(0, take);
      wire.remove_prefix(take);
      remaining_ -= take;
      if (chunk_hash_) chunk_hash_->update(data);
      if (remaining_ == 0) {
        if (auto ended = end_chunk(); !ended) return ended;
        state_ = State::data_crlf;
      }
      return {};
    }
    case State::data_crlf: {
      // Two bytes, possibly split across reads.
      const auto take = std::min<std::size_t>(2 - line_.size(), wire.size());
      line_.append(wire.substr(0, take));
      wire.remove_prefix(take);
      if (line_.size() < 2) return {};
      if (line_ != "\r\n") return error(Err::invalid_chunk, "A chunk is not followed by CRLF.");
      line_.clear();
      state_ = State::size_line;
      return {};
    }
    case State::trailers:
      line_.append(wire);
      wire = {};
      if (line_.size() > k_max_trailers)
        return error(Err::invalid_chunk, "The aws-chunked trailers are too long.");
      return {};
    case State::done:
      wire = {};
      return {};
  }
  return {};
}

std::expected<std::vector<Header>, S3Error> AwsChunkedDecoder::finish() {
  if (state_ == State::size_line && !line_.empty())
    return error(Err::incomplete_body, "The aws-chunked body ends inside a chunk header.");
  if (state_ != State::trailers)
    return error(Err::incomplete_body, "The aws-chunked body ends inside a chunk.");
  state_ = State::done;
  // Trailer lines "name:value", ended by an empty line (or by the end of the body: some
  // clients omit the final CRLF).
  std::vector<Header> trailers;
  std::string trailer_signature;
  std::string canonical_trailers;
  std::string_view body = line_;
  std::size_t pos = 0;
  while (pos < body.size()) {
    auto line_end = body.find('\n', pos);
    if (line_end == std::string_view::npos) line_end = body.size();
    const auto line = ascii::trim(body.substr(pos, line_end - pos));
    pos = line_end + 1;
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos)
      return error(Err::invalid_chunk, "A trailer line has no ':'.");
    auto name = ascii::lower(ascii::trim(line.substr(0, colon)));
    const auto value = ascii::trim(line.substr(colon + 1));
    if (name == "x-amz-trailer-signature") {
      trailer_signature = ascii::lower(value);
      continue;
    }
    canonical_trailers.append(name).append(":").append(value).append("\n");
    trailers.emplace_back(std::move(name), std::string(value));
  }
  if (signing_ && !trailers.empty()) {
    if (trailer_signature.empty())
      return error(Err::signature_does_not_match, "The trailer signature is missing.");
    const auto to_sign =
        sigv4::trailer_string_to_sign(signing_->amz_date, signing_->scope, previous_signature_,
                                      crypto::sha256_hex(canonical_trailers));
    if (!signatures_equal(sigv4::signature(signing_->signing_key, to_sign), trailer_signature)) {
      return error(Err::signature_does_not_match,
                   "The trailer signature does not match the trailers.");
    }
  }
  return trailers;
}

// ---- BodyReceiver

BodyReceiver::BodyReceiver(BodyPlan plan) : plan_(std::move(plan)) {
  if (plan_.aws_chunked) decoder_.emplace(plan_.signing);
  // An object body's spool file hashes what it is given; a body kept in memory is hashed
  // as it arrives (control bodies) or at the end (small object bodies, at most 16 KiB).
  if (!plan_.to_file && plan_.sha256_hex) sha256_.emplace(crypto::Digest::Algorithm::sha256);
}

BodyReceiver::~BodyReceiver() = default;

std::expected<void, S3Error> BodyReceiver::take(std::string_view data) {
  size_ += data.size();
  if (size_ > plan_.max_size) {
    return error(plan_.to_file ? Err::entity_too_large : Err::max_message_length_exceeded);
  }
  if (!file_ && plan_.to_file &&
      memory_.size() + data.size() > static_cast<std::size_t>(store::k_max_db_blob)) {
    // Past the size of a blob kept in the database: the body goes to a file (which also
    // keeps every body's memory bounded), from its first byte.
    file_.emplace(plan_.tmp_dir, plan_.checksums);
    if (auto moved = file_->write(memory_); !moved) return moved;
    std::string().swap(memory_);
  }
  if (file_) return file_->write(data);
  memory_.append(data);
  return {};
}

std::expected<void, S3Error> BodyReceiver::feed(std::string_view wire) {
  // x-amz-content-sha256 names the hash of the bytes on the wire.
  if (sha256_) sha256_->update(wire);
  if (decoder_) return decoder_->feed(wire, [this](std::string_view data) { return take(data); });
  return take(wire);
}

std::expected<DecodedBody, S3Error> BodyReceiver::finish() {
  DecodedBody out;
  if (decoder_) {
    auto trailers = decoder_->finish();
    if (!trailers) return std::unexpected(std::move(trailers.error()));
    out.trailers = std::move(*trailers);
    if (plan_.decoded_length && *plan_.decoded_length != std::to_string(size_)) {
      return error(Err::incomplete_body,
                   "The decoded body length does not match x-amz-decoded-content-length.");
    }
    // x-amz-trailer announces the trailer; it must arrive (sigv4-streaming trailers).
    if (!plan_.announced_trailer.empty()) {
      bool found = false;
      for (const auto& trailer : out.trailers)
        found = found || trailer.first == plan_.announced_trailer;
      if (!found) {
        return error(Err::incomplete_body,
                     "The trailer " + plan_.announced_trailer + " was announced but not sent.");
      }
    }
  }
  if (file_) {
    auto spooled = file_->finish();
    if (!spooled) return std::unexpected(std::move(spooled.error()));
    if (plan_.sha256_hex && spooled->sha256_hex != *plan_.sha256_hex)
      return error(Err::content_sha256_mismatch);
    out.file = std::move(*spooled);
  } else {
    if (plan_.sha256_hex) {
      // Without aws-chunked framing (x-amz-content-sha256 is a hash): the wire is the body.
      const auto actual = sha256_ ? crypto::to_hex(sha256_->finish()) : crypto::sha256_hex(memory_);
      if (actual != *plan_.sha256_hex) return error(Err::content_sha256_mismatch);
    }
    out.data = std::move(memory_);
  }
  return out;
}

std::vector<std::string> requested_checksums(const Request& request) {
  std::vector<std::string> out;
  const auto* trailer = request.header("x-amz-trailer");
  const auto announced = trailer ? ascii::lower(ascii::trim(*trailer)) : std::string{};
  for (const auto algorithm : k_algorithms) {
    const auto name = "x-amz-checksum-" + std::string(algorithm);
    if (request.header(name) || announced == name) out.emplace_back(algorithm);
  }
  return out;
}

}  // namespace tfork::server
