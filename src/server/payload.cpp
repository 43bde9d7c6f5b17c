// SPDX-License-Identifier: Apache-2.0
#include "tfork/server/payload.hpp"

#include "tfork/core/ascii.hpp"
#include "tfork/crypto/hash.hpp"
#include "tfork/sigv4/signer.hpp"

#include <array>
#include <charconv>

namespace tfork::server {
namespace {

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
    raw = crypto::big_endian(crypto::crc32(data));
  } else if (algorithm == "crc32c") {
    raw = crypto::big_endian(crypto::crc32c(data));
  } else if (algorithm == "crc64nvme") {
    raw = crypto::big_endian(crypto::crc64nvme(data));
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
  BodyPlan plan;
  plan.aws_chunked = true;
  plan.max_size = k_max_object_body;
  if (signing) plan.signing = *signing;
  BodyReceiver receiver(std::move(plan));
  if (auto fed = receiver.feed(body); !fed) return std::unexpected(std::move(fed.error()));
  return receiver.finish();
}

BodyPlan plan_body(const Request& request, const Authenticated& auth, bool to_file,
                   const std::filesystem::path& tmp_dir) {
  BodyPlan plan;
  plan.to_file = to_file;
  plan.max_size = to_file ? k_max_object_body : k_max_control_body;
  plan.tmp_dir = tmp_dir;
  plan.checksums = requested_checksums(request);
  switch (auth.payload_mode) {
    case PayloadMode::sha256:
      plan.sha256_hex = auth.payload_sha256;
      return plan;
    case PayloadMode::unsigned_payload:
      return plan;
    case PayloadMode::streaming_signed:
    case PayloadMode::streaming_signed_trailer:
    case PayloadMode::streaming_unsigned_trailer:
      break;
  }
  plan.aws_chunked = true;
  if (auth.payload_mode != PayloadMode::streaming_unsigned_trailer) {
    plan.signing = ChunkSigning{auth.signing_key, auth.amz_date, auth.scope, auth.seed_signature};
  }
  if (const auto* declared = request.header("x-amz-decoded-content-length"))
    plan.decoded_length = *declared;
  if (const auto* announced = request.header("x-amz-trailer"))
    plan.announced_trailer = ascii::lower(ascii::trim(*announced));
  return plan;
}

std::expected<store::Metadata, S3Error> verify_integrity(const Request& request,
                                                         const DecodedBody& body) {
  if (const auto* content_md5 = request.header("content-md5")) {
    const auto digest = crypto::base64_decode(ascii::trim(*content_md5));
    if (!digest || digest->size() != 16) return std::unexpected(make_error(Err::invalid_digest));
    const auto md5 = body.file ? body.file->md5 : crypto::md5(body.data);
    if (*digest != md5) return std::unexpected(make_error(Err::bad_digest));
  }
  store::Metadata verified;
  for (const auto& algorithm : k_checksums) {
    const auto name = "x-amz-checksum-" + std::string(algorithm.name);
    const std::string* value = request.header(name);
    for (const auto& trailer : body.trailers) {
      if (trailer.first == name) value = &trailer.second;
    }
    if (!value) continue;
    const auto claimed = std::string(ascii::trim(*value));
    const auto raw = crypto::base64_decode(claimed);
    if (!raw || raw->size() != algorithm.bytes) {
      return std::unexpected(
          make_error(Err::invalid_checksum, "Value for " + name + " header is invalid."));
    }
    std::string actual;
    if (body.file) {
      for (const auto& [name_of, value_of] : body.file->checksums) {
        if (name_of == algorithm.name) actual = value_of;
      }
    } else {
      actual = checksum_of(algorithm.name, body.data);
    }
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
