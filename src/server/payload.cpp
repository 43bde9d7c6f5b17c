#include "tfork/server/payload.hpp"

#include "tfork/crypto/hash.hpp"
#include "tfork/sigv4/signer.hpp"

#include <array>
#include <charconv>

namespace tfork::server {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

std::string to_lower(std::string_view text) {
  std::string out(text);
  for (auto& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return out;
}

std::unexpected<S3Error> chunk_error(Err id, std::string message) {
  return std::unexpected(make_error(id, std::move(message)));
}

template <class T>
std::string big_endian(T value) {
  std::string out(sizeof(T), '\0');
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out[sizeof(T) - 1 - i] = static_cast<char>(value & 0xff);
    value >>= 8;
  }
  return out;
}

// The algorithms of x-amz-checksum-*, with their raw digest sizes.
struct ChecksumAlgorithm {
  std::string_view name;
  std::size_t bytes;
};
constexpr std::array k_checksums = {
    ChecksumAlgorithm{"crc32", 4},     ChecksumAlgorithm{"crc32c", 4},
    ChecksumAlgorithm{"crc64nvme", 8}, ChecksumAlgorithm{"sha1", 20},
    ChecksumAlgorithm{"sha256", 32},
};

std::string upper(std::string_view text) {
  std::string out(text);
  for (auto& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
  }
  return out;
}

}  // namespace

std::string checksum_of(std::string_view algorithm, std::string_view data) {
  std::string raw;
  if (algorithm == "crc32") {
    raw = big_endian(crypto::crc32(data));
  } else if (algorithm == "crc32c") {
    raw = big_endian(crypto::crc32c(data));
  } else if (algorithm == "crc64nvme") {
    raw = big_endian(crypto::crc64nvme(data));
  } else if (algorithm == "sha1") {
    raw = crypto::sha1(data);
  } else if (algorithm == "sha256") {
    raw = crypto::sha256(data);
  } else {
    return {};
  }
  return crypto::base64_encode(raw);
}

std::expected<DecodedBody, S3Error> decode_aws_chunked(std::string_view body,
                                                       const ChunkSigning* signing) {
  DecodedBody out;
  std::string previous = signing ? signing->seed_signature : std::string{};
  std::size_t pos = 0;
  for (;;) {
    const auto line_end = body.find("\r\n", pos);
    if (line_end == std::string_view::npos) {
      return chunk_error(Err::incomplete_body, "The aws-chunked body ends inside a chunk header.");
    }
    const auto header = body.substr(pos, line_end - pos);
    const auto semi = header.find(';');
    const auto size_text = trim(header.substr(0, semi));
    std::uint64_t size = 0;
    const auto [end, ec] =
        std::from_chars(size_text.data(), size_text.data() + size_text.size(), size, 16);
    if (size_text.empty() || size_text.size() > 15 || ec != std::errc{} ||
        end != size_text.data() + size_text.size()) {
      return chunk_error(Err::invalid_chunk, "Invalid aws-chunked chunk size.");
    }
    std::string_view chunk_signature;
    if (semi != std::string_view::npos) {
      const auto extension = trim(header.substr(semi + 1));
      constexpr std::string_view k_prefix = "chunk-signature=";
      if (extension.starts_with(k_prefix)) chunk_signature = extension.substr(k_prefix.size());
    }
    pos = line_end + 2;
    if (size > body.size() - pos) {
      return chunk_error(Err::incomplete_body, "The aws-chunked body ends inside a chunk.");
    }
    const auto chunk = body.substr(pos, size);
    if (signing) {
      // AWS sigv4-streaming: each chunk signs its hash and the previous signature.
      if (chunk_signature.empty()) {
        return chunk_error(Err::signature_does_not_match, "A chunk signature is missing.");
      }
      const auto to_sign = sigv4::chunk_string_to_sign(signing->amz_date, signing->scope, previous,
                                                       crypto::sha256_hex(chunk));
      auto expected = sigv4::signature(signing->signing_key, to_sign);
      if (!signatures_equal(expected, to_lower(chunk_signature))) {
        return chunk_error(Err::signature_does_not_match,
                           "The chunk signature does not match the chunk.");
      }
      previous = std::move(expected);
    }
    out.data.append(chunk);
    pos += size;
    if (size == 0) break;
    if (body.substr(pos, 2) != "\r\n") {
      return chunk_error(Err::invalid_chunk, "A chunk is not followed by CRLF.");
    }
    pos += 2;
  }

  // Trailer lines "name:value", ended by an empty line (or by the end of the body: some
  // clients omit the final CRLF).
  std::string trailer_signature;
  std::string canonical_trailers;
  while (pos < body.size()) {
    auto line_end = body.find('\n', pos);
    if (line_end == std::string_view::npos) line_end = body.size();
    const auto line = trim(body.substr(pos, line_end - pos));
    pos = line_end + 1;
    if (line.empty()) break;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) {
      return chunk_error(Err::invalid_chunk, "A trailer line has no ':'.");
    }
    auto name = to_lower(trim(line.substr(0, colon)));
    const auto value = trim(line.substr(colon + 1));
    if (name == "x-amz-trailer-signature") {
      trailer_signature = to_lower(value);
      continue;
    }
    canonical_trailers.append(name).append(":").append(value).append("\n");
    out.trailers.emplace_back(std::move(name), std::string(value));
  }
  if (signing && !out.trailers.empty()) {
    if (trailer_signature.empty()) {
      return chunk_error(Err::signature_does_not_match, "The trailer signature is missing.");
    }
    const auto to_sign = sigv4::trailer_string_to_sign(signing->amz_date, signing->scope, previous,
                                                       crypto::sha256_hex(canonical_trailers));
    if (!signatures_equal(sigv4::signature(signing->signing_key, to_sign), trailer_signature)) {
      return chunk_error(Err::signature_does_not_match,
                         "The trailer signature does not match the trailers.");
    }
  }
  return out;
}

std::expected<DecodedBody, S3Error> read_payload(const Request& request,
                                                 const Authenticated& auth) {
  switch (auth.payload_mode) {
    case PayloadMode::sha256:
      if (crypto::sha256_hex(request.body) != auth.payload_sha256) {
        return std::unexpected(make_error(Err::content_sha256_mismatch));
      }
      return DecodedBody{request.body, {}};
    case PayloadMode::unsigned_payload:
      return DecodedBody{request.body, {}};
    case PayloadMode::streaming_signed:
    case PayloadMode::streaming_signed_trailer:
    case PayloadMode::streaming_unsigned_trailer:
      break;
  }
  std::optional<ChunkSigning> signing;
  if (auth.payload_mode != PayloadMode::streaming_unsigned_trailer) {
    signing = ChunkSigning{auth.signing_key, auth.amz_date, auth.scope, auth.seed_signature};
  }
  auto decoded = decode_aws_chunked(request.body, signing ? &*signing : nullptr);
  if (!decoded) return decoded;
  if (const auto* declared = request.header("x-amz-decoded-content-length")) {
    if (*declared != std::to_string(decoded->data.size())) {
      return std::unexpected(
          make_error(Err::incomplete_body,
                     "The decoded body length does not match x-amz-decoded-content-length."));
    }
  }
  // x-amz-trailer announces the trailer; it must arrive (sigv4-streaming trailers).
  if (const auto* announced = request.header("x-amz-trailer")) {
    const auto wanted = to_lower(trim(*announced));
    bool found = false;
    for (const auto& trailer : decoded->trailers)
      found = found || trailer.first == wanted;
    if (!wanted.empty() && !found) {
      return std::unexpected(make_error(Err::incomplete_body,
                                        "The trailer " + wanted + " was announced but not sent."));
    }
  }
  return decoded;
}

std::expected<store::Metadata, S3Error> verify_integrity(const Request& request,
                                                         const DecodedBody& body) {
  if (const auto* content_md5 = request.header("content-md5")) {
    const auto digest = crypto::base64_decode(trim(*content_md5));
    if (!digest || digest->size() != 16) return std::unexpected(make_error(Err::invalid_digest));
    if (*digest != crypto::md5(body.data)) return std::unexpected(make_error(Err::bad_digest));
  }
  store::Metadata verified;
  for (const auto& algorithm : k_checksums) {
    const auto name = "x-amz-checksum-" + std::string(algorithm.name);
    const std::string* value = request.header(name);
    for (const auto& trailer : body.trailers) {
      if (trailer.first == name) value = &trailer.second;
    }
    if (!value) continue;
    const auto claimed = std::string(trim(*value));
    const auto raw = crypto::base64_decode(claimed);
    if (!raw || raw->size() != algorithm.bytes) {
      return std::unexpected(
          make_error(Err::invalid_checksum, "Value for " + name + " header is invalid."));
    }
    const auto actual = checksum_of(algorithm.name, body.data);
    if (crypto::base64_decode(actual) != raw) {
      return std::unexpected(
          make_error(Err::bad_digest, "The " + upper(algorithm.name) +
                                          " you specified did not match the calculated checksum."));
    }
    verified.emplace_back(std::string(algorithm.name), actual);
  }
  return verified;
}

}  // namespace tfork::server
