// SPDX-License-Identifier: Apache-2.0
// POST /?func=presign: a presigned URL minted by the server for one of its keys, as the
// Tigris gateway does for the Tigris CLI's `presign` and @tigrisdata/storage's
// getPresignedUrl (the client names the key; the server holds every key's secret).
#include "tfork/server/operations.hpp"
#include "tfork/sigv4/signer.hpp"

#include <nlohmann/json.hpp>

namespace tfork::server {
namespace {

std::string string_field(const nlohmann::json& body, const char* name) {
  const auto it = body.find(name);
  if (it == body.end() || !it->is_string() || it->get<std::string>().empty())
    fail(Err::invalid_argument, std::string(name) + " is required (a non-empty string).");
  return it->get<std::string>();
}

}  // namespace

Response presign(Call& call) {
  const auto body = nlohmann::json::parse(call.body.data, nullptr, false);
  if (body.is_discarded() || !body.is_object())
    fail(Err::invalid_argument, "The body must be a JSON object.");
  const auto bucket = string_field(body, "bucket");
  const auto key = string_field(body, "key");
  const auto key_id = string_field(body, "key_id");
  const auto type = string_field(body, "type");
  if (type != "get" && type != "put")
    fail(Err::invalid_argument, "type must be \"get\" or \"put\".");
  std::int64_t expires = 3600;
  if (const auto it = body.find("expires_in"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer()) fail(Err::invalid_argument, "expires_in must be an integer.");
    expires = it->get<std::int64_t>();
  }
  if (expires < 1 || expires > k_max_presign_expiry.count())
    fail(Err::invalid_argument, "expires_in must be between 1 and 604800 seconds.");
  if (key.size() > k_max_key_bytes) fail(Err::key_too_long);

  // A scoped key presigns only with itself; an administrator with any key.
  if (!is_admin(call.principal) && key_id != call.principal.access_key_id)
    fail(Err::access_denied, "A scoped access key can presign URLs only with itself.");
  const auto record = call.keys ? (*call.keys)(key_id) : std::nullopt;
  if (!record) fail(Err::invalid_argument, "No active access key " + key_id + ".");
  // The URL would be refused when used: say so now, before asking whether the bucket exists,
  // so that a key learns nothing of buckets it may not use (a missing one answers the same).
  if (!allowed(record->principal, bucket, type == "get" ? Access::read : Access::write)) {
    S3Error error = make_error(Err::access_denied, "The access key " + key_id + " may not " +
                                                       (type == "get" ? "read" : "write") +
                                                       " bucket " + bucket + ".");
    error.bucket = bucket;
    fail(std::move(error));
  }
  check(call.store.head_bucket(bucket), bucket);
  const auto* host = call.header("host");
  if (!host || host->empty()) fail(Err::invalid_request, "A Host header is required.");

  // Path style: the server is addressed by IP and port.
  sigv4::Request request;
  request.method = type == "get" ? "GET" : "PUT";
  request.path = "/" + sigv4::uri_encode(bucket, false) + "/" + sigv4::uri_encode(key, true);
  request.headers = {{"host", *host}};
  const auto query =
      sigv4::presign(request, sigv4::Credentials{key_id, record->secret, {}},
                     sigv4::SigningParams{}, call.now, std::chrono::seconds(expires));
  const std::string url = "http://" + *host + request.path + "?" + query;
  return json_response(200, nlohmann::ordered_json{{"url", url}}.dump());
}

}  // namespace tfork::server
