// SPDX-License-Identifier: Apache-2.0
#include "tfork/server/handler.hpp"

#include "tfork/crypto/hash.hpp"
#include "tfork/crypto/primitives.hpp"
#include "tfork/server/auth.hpp"
#include "tfork/server/object_support.hpp"
#include "tfork/server/operations.hpp"
#include "tfork/server/xml_render.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <future>

namespace tfork::server {
namespace {

// S3 subresources this server does not implement: answered 501 instead of being mistaken
// for a plain bucket or object operation.
bool has_unsupported_subresource(const Target& target) {
  static constexpr std::string_view k_unsupported[] = {"acl",
                                                       "policy",
                                                       "cors",
                                                       "lifecycle",
                                                       "tagging",
                                                       "website",
                                                       "logging",
                                                       "notification",
                                                       "replication",
                                                       "encryption",
                                                       "object-lock",
                                                       "retention",
                                                       "legal-hold",
                                                       "torrent",
                                                       "select",
                                                       "restore",
                                                       "accelerate",
                                                       "analytics",
                                                       "inventory",
                                                       "metrics",
                                                       "ownershipControls",
                                                       "publicAccessBlock",
                                                       "requestPayment",
                                                       "intelligent-tiering",
                                                       "policyStatus"};
  for (const auto name : k_unsupported) {
    if (target.has(name)) return true;
  }
  return false;
}

Reply dispatch_s3(Call& call) {
  const auto& method = call.request.method;
  const auto& target = call.target;
  if (method == "GET" && target.has_key && target.has("tagging")) {
    check_key(call);
    return get_object_tagging(call);
  }
  if (target.has("attributes") && (method != "GET" || !target.has_key)) fail(Err::not_implemented);
  if (has_unsupported_subresource(target)) fail(Err::not_implemented);
  if (target.has("versions") && (method != "GET" || target.has_key)) fail(Err::not_implemented);
  // Versions come from Tigris snapshots: S3's versioning configuration is only read.
  if (target.has("versioning") && (method != "GET" || target.has_key)) fail(Err::not_implemented);

  if (target.bucket.empty()) {
    if (method == "GET") return list_buckets(call);
    if (method == "POST" && target.has("func")) {
      const auto* func = target.get("func");
      if (*func == "presign") return presign(call);
      fail(Err::not_implemented, "The function " + *func + " is not supported by tfork serve.");
    }
    fail(Err::method_not_allowed);
  }
  if (!target.has_key) {
    if (method == "PUT") return create_bucket(call);
    if (method == "HEAD") return head_bucket(call);
    if (method == "DELETE") return delete_bucket(call);
    if (method == "PATCH") return patch_bucket(call);
    if (method == "POST") {
      if (target.has("delete")) return delete_objects(call);
      fail(Err::not_implemented);
    }
    if (method == "GET") {
      if (target.has("metadata")) return bucket_metadata(call);
      if (target.has("location")) return bucket_location(call);
      if (target.has("versioning")) return bucket_versioning(call);
      if (target.has("versions")) return list_object_versions(call);
      if (target.has("uploads")) return list_multipart_uploads(call);
      const auto* list_type = target.get("list-type");
      if (list_type && *list_type == "2") return list_objects(call, 2);
      if (list_type && *list_type != "1") fail(Err::invalid_argument, "Invalid list-type.");
      return list_objects(call, 1);
    }
    fail(Err::method_not_allowed);
  }

  check_key(call);
  if (method == "PUT") {
    if (target.has("uploadId") || target.has("partNumber")) return upload_part(call);
    if (call.header("x-amz-copy-source")) return copy_object(call);
    return put_object(call);
  }
  if (method == "GET" || method == "HEAD") {
    if (method == "GET" && target.has("uploadId")) return list_parts(call);
    if (method == "GET" && target.has("attributes")) return get_object_attributes(call);
    return get_object(call);
  }
  if (method == "DELETE") {
    if (target.has("uploadId")) return abort_multipart_upload(call);
    return delete_object(call);
  }
  if (method == "POST") {
    if (target.has("uploads")) return create_multipart_upload(call);
    if (target.has("uploadId")) return complete_multipart_upload(call);
    fail(Err::not_implemented);
  }
  fail(Err::method_not_allowed);
}

Response error_response(const S3Error& error, const Request& request, const Target* target,
                        bool json, std::string_view request_id) {
  Response response;
  response.status = error.status();
  for (const auto& header : error.headers)
    response.set_header(header.first, header.second);
  if (request.method == "HEAD") return response;  // HEAD never has a body (§5.4)
  if (json) {
    // tigris-wire §1.5: JSON endpoints' errors; clients read "Message".
    nlohmann::ordered_json body;
    body["Code"] = error.code();
    body["Message"] = error.text();
    body["RequestId"] = request_id;
    response.body = body.dump();
    response.set_header("Content-Type", "application/json");
  } else {
    const std::string resource = target ? target->wire_path : std::string("/");
    response.body = render_error(error, resource, request_id);
    response.set_header("Content-Type", "application/xml");
  }
  return response;
}

// `serve --quirks iam-message-errors`: status 400 and only {"Message": "<Code>: <text>"},
// as some IAM gateways answer, so clients must find the code inside the text.
Response iam_message_error(const S3Error& error, const Request& request) {
  Response response;
  response.status = 400;
  if (request.method == "HEAD") return response;
  nlohmann::ordered_json body;
  body["Message"] = std::string(error.code()) + ": " + std::string(error.text());
  response.body = body.dump();
  response.set_header("Content-Type", "application/json");
  return response;
}

// Request ids must be unique, not secret. Each thread draws its seed once from OpenSSL and then
// steps splitmix64: a draw from RAND_bytes checks the process id first, a system call per
// response that cost about 1% of a small PUT's CPU.
std::uint64_t next_id_bits() {
  thread_local std::uint64_t state = [] {
    std::uint64_t seed = 0;
    const auto bytes = crypto::primitives().random_bytes(sizeof seed);
    std::memcpy(&seed, bytes.data(), sizeof seed);
    return seed;
  }();
  std::uint64_t z = state += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31U);
}

}  // namespace

std::string new_request_id() {
  return fmt::format("{:016X}", next_id_bits());
}

bool Call::wants_json() const {
  const auto* accept = request.header("accept");
  return accept && accept->find("application/json") != std::string::npos;
}

void require(const Call& call, std::string_view bucket, Access access) {
  if (!allowed(call.principal, bucket, access)) {
    S3Error error = make_error(Err::access_denied);
    error.bucket = std::string(bucket);
    fail(std::move(error));
  }
}

std::optional<store::Seq> parse_seq(std::string_view text) {
  store::Seq value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || value < 0) {
    return std::nullopt;
  }
  return value;
}

std::optional<store::Seq> snapshot_version(const Call& call) {
  const auto* value = call.header("x-tigris-snapshot-version");
  if (!value) return std::nullopt;
  auto seq = parse_seq(*value);
  if (!seq) {
    fail(Err::invalid_argument,
         "X-Tigris-Snapshot-Version must be a snapshot version (Unix nanoseconds).");
  }
  return seq;
}

Response xml_response(int status, std::string body) {
  Response response;
  response.status = status;
  response.body = std::move(body);
  response.set_header("Content-Type", "application/xml");
  return response;
}

Response json_response(int status, std::string body) {
  Response response;
  response.status = status;
  response.body = std::move(body);
  response.set_header("Content-Type", "application/json");
  return response;
}

void check_key(const Call& call) {
  const auto refuse = [&](S3Error error) {
    error.bucket = call.target.bucket;
    fail(std::move(error));
  };
  if (call.target.key.size() > k_max_key_bytes) refuse(make_error(Err::key_too_long));
  // A key that is not UTF-8 could be stored but never listed: XML and JSON carry UTF-8 only.
  if (!valid_utf8(call.target.key))
    refuse(make_error(Err::invalid_argument, "Object keys must be valid UTF-8."));
}

namespace {

void stamp(Response& response, std::string_view request_id) {
  response.set_header("x-amz-request-id", std::string(request_id));
  // S3's host id: 64 base64 characters, here of 48 hex digits.
  response.set_header("x-amz-id-2",
                      crypto::base64_encode(fmt::format("{:016x}{:016x}{:016x}", next_id_bits(),
                                                        next_id_bits(), next_id_bits())));
  response.set_header("Server", "tfork");
}

void log_error(const Request& request, const S3Error& error) {
  if (error.status() >= 500 && error.id != Err::slow_down) {
    spdlog::error("{} {} -> {} {}: {}", request.method, loggable_target(request.target),
                  error.status(), error.code(), error.detail.empty() ? error.text() : error.detail);
  } else {
    spdlog::debug("{} {} -> {} {}", request.method, loggable_target(request.target), error.status(),
                  error.code());
  }
}

// Tigris JSON endpoints answer errors in JSON too (tigris-wire §1.5, §2.2, §2.8).
bool answers_json(const Request& request, const Target& target) {
  if (request.method == "PATCH" || (!target.has_key && target.has("metadata"))) return true;
  if (!target.bucket.empty()) return false;
  if (target.has("func")) return true;  // POST /?func=presign and its kind answer JSON
  const auto* accept = request.header("accept");
  return accept && accept->find("application/json") != std::string::npos;
}

// PutObject and UploadPart carry object data; every other body is a small control document.
bool carries_object_body(const Request& request, const Target& target) {
  return request.method == "PUT" && target.has_key && !request.header("x-amz-copy-source") &&
         !target.has("tagging") && !target.has("acl") && !target.has("retention") &&
         !target.has("legal-hold");
}

// The length the client declared, or nullopt when the body is chunked (or absent).
std::optional<std::uint64_t> declared_length(const Request& request) {
  const auto* value = request.header("content-length");
  if (!value) return std::nullopt;
  std::uint64_t length = 0;
  const auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), length);
  if (ec != std::errc{} || end != value->data() + value->size()) return std::nullopt;
  return length;
}

// A POST to the service root is an IAM call (tigris-wire §3.2) that may sign its body's hash
// rather than send x-amz-content-sha256: its signature can only be verified with its body.
bool signs_body_hash(const Request& head, const Target& target) {
  return head.method == "POST" && target.bucket.empty() && !head.header("x-amz-content-sha256") &&
         head.header("authorization");
}

// IAM calls are small forms (CreateAccessKeyWithBucketsRole with a few dozen buckets is under
// 4 KiB); bodies read before their signature is verified are held to this.
constexpr std::uint64_t k_max_unsigned_iam_body = 16 * 1024;

// Before the body of such a call is read, whoever sends it has to name a key that exists, in a
// credential scope of the right service and date, signed within the allowed skew; and its body
// must be small and of a declared length. Anyone else is answered from the head, so reading
// bodies cannot be had for the price of an Authorization header.
std::expected<void, S3Error> admit_unsigned_iam_body(const Request& head, const KeyLookup& keys,
                                                     Clock::time_point now) {
  if (auto checked = check_before_body(head, keys, now); !checked) return checked;
  const auto length = declared_length(head);
  // No Content-Length with a body is Transfer-Encoding: chunked, of any length.
  if ((!length && head.header("transfer-encoding")) ||
      (length && *length > k_max_unsigned_iam_body)) {
    return std::unexpected(make_error(
        Err::max_message_length_exceeded,
        fmt::format(
            "An IAM request signed without x-amz-content-sha256 must declare its "
            "Content-Length, of at most {} KiB; send x-amz-content-sha256 for a larger one.",
            k_max_unsigned_iam_body / 1024)));
  }
  return {};
}

}  // namespace

Handler::Handler(store::Store& store, HandlerOptions options)
    : store_(store), options_(std::move(options)), variance_(options_.variance) {}

KeyLookup Handler::key_lookup() {
  // Keys are looked up on every request, so a deleted key fails at once (§6.9).
  return [this](std::string_view id) -> std::optional<KeyRecord> {
    if (!options_.root_access_key.empty() && id == options_.root_access_key) {
      return KeyRecord{options_.root_secret_key, Principal{std::string(id), true, {}}};
    }
    auto key = store_.get_access_key(id);
    if (!key || !key->active) return std::nullopt;
    return KeyRecord{key->secret, Principal{key->id, false, key->roles}};
  };
}

Response Handler::reject(const Request& head, const Admission* admission, const S3Error& error) {
  log_error(head, error);
  const auto request_id = admission ? admission->request_id : new_request_id();
  // Refused before admission: the resource is still the path the client asked for.
  const auto parsed = admission ? std::expected<Target, std::string>{} : parse_target(head.target);
  const Target* target = admission ? &admission->target : parsed ? &*parsed : nullptr;
  auto response =
      admission && variance_.has(Quirk::iam_message_errors) &&
              is_iam_request(head, admission->target, {})
          ? iam_message_error(error, head)
          : error_response(error, head, target, admission && admission->json, request_id);
  stamp(response, request_id);
  return response;
}

std::expected<Admission, Response> Handler::admit(const Request& head) {
  Admission admission;
  admission.request_id = new_request_id();
  admission.now = options_.clock();
  auto parsed = parse_target(head.target);
  if (!parsed)
    return std::unexpected(reject(head, nullptr, make_error(Err::invalid_uri, parsed.error())));
  admission.target = std::move(*parsed);
  const auto& target = admission.target;
  admission.json = answers_json(head, target);
  admission.object_body = carries_object_body(head, target);
  const auto fail_with = [&](S3Error error) {
    return std::unexpected(reject(head, &admission, error));
  };
  if (const auto* type = head.header("content-type");
      type && type->starts_with("multipart/form-data")) {
    // Browser POST uploads are not supported; the body is left unread.
    return fail_with(make_error(Err::not_implemented, "POST object uploads are not supported."));
  }
  if (const auto* length = head.header("content-length"); length && !declared_length(head)) {
    return fail_with(make_error(Err::invalid_argument, "Content-Length must be a number."));
  }
  // Two different lengths: which one frames the body is anyone's guess (request smuggling).
  for (const auto& [name, value] : head.headers) {
    if (iequals(name, "content-length") && value != *head.header("content-length")) {
      return fail_with(
          make_error(Err::invalid_argument, "Content-Length is given twice, with two values."));
    }
  }
  if (const auto length = declared_length(head)) {
    // The aws-chunked framing adds a little to the object; control documents are small.
    const auto limit = admission.object_body ? k_max_object_body + (std::uint64_t{64} << 20)
                                             : k_max_control_body + 64 * 1024;
    if (*length > limit) {
      return fail_with(make_error(admission.object_body ? Err::entity_too_large
                                                        : Err::max_message_length_exceeded));
    }
  }
  if (signs_body_hash(head, target)) {
    admission.json = true;
    if (auto checked = admit_unsigned_iam_body(head, key_lookup(), admission.now); !checked)
      return fail_with(std::move(checked.error()));
    return admission;
  }
  auto auth = authenticate(head, target, key_lookup(),
                           AuthOptions{is_iam_request(head, target, {}), admission.now});
  if (!auth) return fail_with(std::move(auth.error()));
  admission.auth = std::move(*auth);
  if (admission.auth->query_plus_is_space) {
    // One decoding for the signature and the request: the one the signature verified with.
    auto query = parse_query(admission.target.wire_query, /*plus_is_space=*/true);
    if (!query) return fail_with(make_error(Err::invalid_uri, query.error()));
    admission.target.query = std::move(*query);
  }
  // An object body is refused before it is read when the disk has no room for it (it would
  // fill tmp/ first, and the reserve kept for deletes with it).
  if (const auto length = declared_length(head); admission.object_body && length) {
    std::uint64_t size = *length;
    if (const auto* decoded = head.header("x-amz-decoded-content-length"))
      std::from_chars(decoded->data(), decoded->data() + decoded->size(), size);
    if (auto room = store_.admit_data(static_cast<std::int64_t>(size)); !room)
      return fail_with(store_error(room.error()));
  }
  return admission;
}

std::unique_ptr<BodyReceiver> Handler::receiver(const Request& head, const Admission& admission) {
  if (!admission.auth) return std::make_unique<BodyReceiver>(BodyPlan{});
  auto plan = plan_body(head, *admission.auth, admission.object_body, store_.tmp_dir());
  // A part of an upload created with a checksum algorithm gets that checksum computed while it
  // streams, whether or not its client sent it (Complete combines the parts' checksums).
  if (const auto* upload_id = admission.target.get("uploadId");
      upload_id && admission.object_body) {
    if (const auto upload = store_.get_upload(*upload_id); upload && !upload->checksums.empty()) {
      const auto& algorithm = upload->checksums.front().first;
      if (std::ranges::find(plan.checksums, algorithm) == plan.checksums.end())
        plan.checksums.push_back(algorithm);
    }
  }
  return std::make_unique<BodyReceiver>(std::move(plan));
}

Reply Handler::run(const Request& head, const Admission& admission, DecodedBody body) {
  if (!admission.auth) return run_signed_by_body(head, admission, std::move(body));
  const auto keys = key_lookup();
  ErrorForm form{admission.json, false};  // answer() reads it as `produce` left it
  return answer(head, admission, form, [&]() -> Reply {
    auto checksums = verify_integrity(head, body);
    if (!checksums) fail(std::move(checksums.error()));
    form.iam = is_iam_request(head, admission.target, body.data);
    form.json = form.json || form.iam;
    Call call{head,
              admission.target,
              store_,
              admission.auth->principal,
              std::move(body),
              std::move(*checksums),
              admission.now,
              variance_,
              &keys};
    if (form.iam) return iam_dispatch(call);
    return dispatch_s3(call);
  });
}

Reply Handler::run_signed_by_body(const Request& head, const Admission& admission,
                                  DecodedBody body) {
  Request whole = head;
  whole.body = std::move(body.data);
  auto auth =
      authenticate(whole, admission.target, key_lookup(),
                   AuthOptions{is_iam_request(whole, admission.target, whole.body), admission.now});
  if (!auth) return reject(head, &admission, auth.error());
  Admission authenticated = admission;
  authenticated.auth = std::move(*auth);
  if (authenticated.auth->query_plus_is_space) {
    if (auto query = parse_query(admission.target.wire_query, /*plus_is_space=*/true))
      authenticated.target.query = std::move(*query);
  }
  // An IAM call is answered at once (it never prepares a PendingWrite that would outlive
  // `whole` and `authenticated`); a pending write here would be a bug, answered as one.
  DecodedBody kept;
  kept.data = whole.body;
  auto reply = run(whole, authenticated, std::move(kept));
  if (std::holds_alternative<Response>(reply)) return reply;
  spdlog::error("{} {}: a body-signed request prepared a store write", head.method,
                loggable_target(head.target));
  return reject(head, &admission, make_error(Err::internal_error));
}

void Handler::commit(const Request& head, const Admission& admission, PendingWrite write,
                     std::function<void(Response)> answered) {
  const ErrorForm form{admission.json, false};
  store_.put_object_async(
      write.bucket, write.key, std::move(write.object),
      [this, &head, &admission, form, bucket = write.bucket, key = write.key,
       answered = std::move(answered)](store::Result<store::ObjectInfo> written) {
        auto reply = answer(head, admission, form, [&]() -> Reply {
          return put_written(check(std::move(written), bucket, key));
        });
        answered(std::get<Response>(std::move(reply)));
      },
      std::move(write.conditions));
}

bool Handler::may_wait(const Request& head, const Admission& admission,
                       const DecodedBody& body) const {
  if (head.method == "GET" || head.method == "HEAD") return false;  // reads never wait
  // dispatch_s3 sends a PutObject with a body in memory to put_object, which only prepares
  // its write (or refuses the request after reads alone). A body in a file is adopted as a
  // blob first: file system work that may wait.
  const bool prepares_only = admission.auth && admission.object_body && head.method == "PUT" &&
                             !body.file && !admission.target.has("uploadId") &&
                             !admission.target.has("partNumber");
  return !prepares_only;
}

Reply Handler::answer(const Request& request, const Admission& admission, const ErrorForm& form,
                      const std::function<Reply()>& produce) {
  Response response;
  try {
    auto reply = produce();
    if (auto* write = std::get_if<PendingWrite>(&reply)) return std::move(*write);
    response = std::get<Response>(std::move(reply));
  } catch (const S3Exception& e) {
    log_error(request, e.error());
    response = form.iam && variance_.has(Quirk::iam_message_errors)
                   ? iam_message_error(e.error(), request)
                   : error_response(e.error(), request, &admission.target, form.json,
                                    admission.request_id);
  } catch (const std::exception& e) {
    spdlog::error("{} {}: unexpected failure: {}", request.method, loggable_target(request.target),
                  e.what());
    response = error_response(make_error(Err::internal_error), request, &admission.target,
                              form.json, admission.request_id);
  }
  stamp(response, admission.request_id);
  return response;
}

Response Handler::settle(const Request& head, const Admission& admission, Reply reply) {
  if (auto* response = std::get_if<Response>(&reply)) return std::move(*response);
  std::promise<Response> answered;
  auto response = answered.get_future();
  commit(head, admission, std::get<PendingWrite>(std::move(reply)),
         [&answered](Response done) { answered.set_value(std::move(done)); });
  return response.get();
}

Response Handler::handle(const Request& request) {
  auto admission = admit(request);
  if (!admission) return std::move(admission.error());
  auto body_receiver = receiver(request, *admission);
  if (auto fed = body_receiver->feed(request.body); !fed)
    return reject(request, &*admission, fed.error());
  auto body = body_receiver->finish();
  if (!body) return reject(request, &*admission, body.error());
  return settle(request, *admission, run(request, *admission, std::move(*body)));
}

}  // namespace tfork::server
