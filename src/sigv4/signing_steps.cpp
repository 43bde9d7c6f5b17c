// SPDX-License-Identifier: Apache-2.0
// SigV4 tasks 2–4 (AWS General Reference): string to sign, signing key, signature.

#include "tfork/crypto/hash.hpp"
#include "tfork/sigv4/signer.hpp"

#include <fmt/format.h>

namespace tfork::sigv4 {

std::string amz_date(Clock::time_point time) {
  // ISO 8601 basic format in UTC, to the second ("20150830T123600Z").
  const auto seconds = std::chrono::floor<std::chrono::seconds>(time);
  const auto days = std::chrono::floor<std::chrono::days>(seconds);
  const std::chrono::year_month_day date{days};
  const std::chrono::hh_mm_ss time_of_day{seconds - days};
  return fmt::format("{:04}{:02}{:02}T{:02}{:02}{:02}Z", static_cast<int>(date.year()),
                     static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                     time_of_day.hours().count(), time_of_day.minutes().count(),
                     time_of_day.seconds().count());
}

std::string credential_scope(std::string_view date8, std::string_view region,
                             std::string_view service) {
  return fmt::format("{}/{}/{}/aws4_request", date8, region, service);
}

std::string string_to_sign(std::string_view amz_date, std::string_view scope,
                           std::string_view canonical_request) {
  return fmt::format("AWS4-HMAC-SHA256\n{}\n{}\n{}", amz_date, scope,
                     crypto::sha256_hex(canonical_request));
}

std::string signing_key(std::string_view secret, std::string_view date8, std::string_view region,
                        std::string_view service) {
  const std::string date_key = crypto::hmac_sha256("AWS4" + std::string(secret), date8);
  const std::string region_key = crypto::hmac_sha256(date_key, region);
  const std::string service_key = crypto::hmac_sha256(region_key, service);
  return crypto::hmac_sha256(service_key, "aws4_request");
}

std::string signature(std::string_view signing_key, std::string_view string_to_sign) {
  return crypto::to_hex(crypto::hmac_sha256(signing_key, string_to_sign));
}

std::string authorization_value(std::string_view access_key_id, std::string_view scope,
                                std::string_view signed_names, std::string_view signature_hex) {
  return fmt::format("AWS4-HMAC-SHA256 Credential={}/{}, SignedHeaders={}, Signature={}",
                     access_key_id, scope, signed_names, signature_hex);
}

}  // namespace tfork::sigv4
