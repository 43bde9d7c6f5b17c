// SPDX-License-Identifier: Apache-2.0
// The Tigris IAM actions on the S3 port (tigris-wire §3.2, §3.3): form-encoded POSTs with
// JSON answers. Errors are JSON {"Code","Message"} (handler.cpp).
#include "tfork/server/operations.hpp"
#include "tfork/server/time_format.hpp"

#include <nlohmann/json.hpp>

namespace tfork::server {
namespace {

using Params = std::vector<std::pair<std::string, std::string>>;

bool is_form(const Request& request) {
  const auto* type = request.header("content-type");
  return type && type->find("application/x-www-form-urlencoded") != std::string::npos;
}

// Query parameters, then form fields (the IAM SDK puts Action in the query and the rest in
// the body; AWS-style clients put everything in the body).
Params iam_params(const Call& call) {
  Params params = call.target.query;
  if (is_form(call.request)) {
    if (auto form = parse_query(call.body.data)) {
      params.insert(params.end(), form->begin(), form->end());
    }
  }
  return params;
}

const std::string* param(const Params& params, std::string_view name) {
  for (const auto& [key, value] : params) {
    if (key == name) return &value;
  }
  return nullptr;
}

std::string role_name(store::Role role) {
  switch (role) {
    case store::Role::editor:
      return "Editor";
    case store::Role::read_only:
      return "ReadOnly";
    case store::Role::namespace_admin:
      return "NamespaceAdmin";
  }
  return "ReadOnly";
}

nlohmann::json parse_req(const Params& params) {
  const auto* req = param(params, "Req");
  if (!req) fail(Err::invalid_argument, "Missing Req parameter.");
  auto json = nlohmann::json::parse(*req, nullptr, false);
  if (json.is_discarded() || !json.is_object()) fail(Err::invalid_argument, "Req is not JSON.");
  return json;
}

// [{"bucket","role"}], with the client-side rules of the IAM SDK enforced here too: "*" only
// alone and only as NamespaceAdmin; NamespaceAdmin only on "*".
std::vector<store::BucketRole> parse_roles(const nlohmann::json& req) {
  std::vector<store::BucketRole> roles;
  const auto it = req.find("buckets_role");
  if (it == req.end() || it->is_null()) return roles;
  if (!it->is_array()) fail(Err::invalid_argument, "buckets_role must be a list.");
  for (const auto& item : *it) {
    if (!item.is_object() || !item.contains("bucket") || !item.contains("role") ||
        !item["bucket"].is_string() || !item["role"].is_string()) {
      fail(Err::invalid_argument, "Each buckets_role entry needs a bucket and a role.");
    }
    const auto bucket = item["bucket"].get<std::string>();
    const auto role_text = item["role"].get<std::string>();
    store::Role role;
    if (role_text == "Editor")
      role = store::Role::editor;
    else if (role_text == "ReadOnly")
      role = store::Role::read_only;
    else if (role_text == "NamespaceAdmin")
      role = store::Role::namespace_admin;
    else
      fail(Err::invalid_argument, "Unknown role " + role_text + ".");
    if ((bucket == "*") != (role == store::Role::namespace_admin)) {
      fail(Err::invalid_argument, "Bucket \"*\" goes with NamespaceAdmin, and only with it.");
    }
    roles.push_back(store::BucketRole{bucket, role});
  }
  const bool has_star = std::ranges::any_of(roles, [](const auto& r) { return r.bucket == "*"; });
  if (has_star && roles.size() > 1) fail(Err::invalid_argument, "\"*\" must be the only bucket.");
  return roles;
}

// A scoped (non-admin) caller may mint or revoke keys only for buckets it edits, and never
// namespace-wide ones (tigris-wire §3.1, 3P videosite; unconfirmed by Tigris docs).
void require_key_rights(const Call& call, const std::vector<store::BucketRole>& roles) {
  if (is_admin(call.principal)) return;
  if (roles.empty()) fail(Err::access_denied, "Only an administrator manages unscoped keys.");
  for (const auto& role : roles) {
    if (role.role == store::Role::namespace_admin ||
        !allowed(call.principal, role.bucket, Access::mint_key)) {
      fail(Err::access_denied, "You need Editor on " + role.bucket + " to manage its keys.");
    }
  }
}

nlohmann::ordered_json roles_json(const std::vector<store::BucketRole>& roles) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& role : roles)
    out.push_back({{"bucket", role.bucket}, {"role", role_name(role.role)}});
  return out;
}

Response create_key(Call& call, const Params& params, bool with_roles) {
  std::string name = "auto";
  std::vector<store::BucketRole> roles;
  if (with_roles) {
    const auto req = parse_req(params);
    if (const auto it = req.find("name"); it != req.end() && it->is_string())
      name = it->get<std::string>();
    roles = parse_roles(req);
  } else if (const auto* user = param(params, "UserName")) {
    name = *user;
  }
  require_key_rights(call, roles);
  const auto key = check(call.store.create_access_key(name, std::move(roles)));
  nlohmann::ordered_json body{{"CreateAccessKeyResult",
                               {{"AccessKey",
                                 {{"AccessKeyId", key.id},
                                  {"SecretAccessKey", key.secret},
                                  {"UserName", key.name},
                                  {"Status", "Active"},
                                  {"CreateDate", rfc3339_nano(key.created)}}}}}};
  return json_response(200, body.dump());
}

Response update_key(Call& call, const Params& params) {
  if (!is_admin(call.principal)) fail(Err::access_denied);
  const auto req = parse_req(params);
  const auto it = req.find("id");
  if (it == req.end() || !it->is_string()) fail(Err::invalid_argument, "Req needs an id.");
  const auto id = it->get<std::string>();
  check(call.store.update_access_key_roles(id, parse_roles(req)));
  return json_response(200, nlohmann::ordered_json{{"status", "success"},
                                                   {"message", "Access key roles updated"},
                                                   {"operation", "UpdateAccessKeyWithBucketsRole"}}
                                .dump());
}

Response delete_key(Call& call, const Params& params) {
  const auto* id = param(params, "AccessKeyId");
  if (!id || id->empty()) fail(Err::invalid_argument, "AccessKeyId is required.");
  const auto key = check(call.store.get_access_key(*id));
  require_key_rights(call, key.roles);
  check(call.store.delete_access_key(*id));
  return json_response(200, nlohmann::ordered_json{{"status", "success"},
                                                   {"message", "Access key deleted"},
                                                   {"operation", "DeleteAccessKey"}}
                                .dump());
}

// RotateAccessKey (tigris-wire §3.3): a fresh secret, the old one refused from the next
// request on (keys are looked up per request). Who may rotate a key is who may delete it.
Response rotate_key(Call& call, const Params& params) {
  const auto* id = param(params, "AccessKeyId");
  if (!id || id->empty()) fail(Err::invalid_argument, "AccessKeyId is required.");
  const auto key = check(call.store.get_access_key(*id));
  require_key_rights(call, key.roles);
  const auto rotated = check(call.store.rotate_access_key(*id));
  return json_response(
      200, nlohmann::ordered_json{{"status", "success"},
                                  {"message", "Access key rotated"},
                                  {"rotate_access_key_result",
                                   {{"id", rotated.id}, {"new_secret", rotated.secret}}}}
               .dump());
}

Response list_keys(Call& call, const Params& params) {
  const auto* key_id = param(params, "KeyId");
  std::vector<store::AccessKey> keys;
  if (key_id) {
    // A scoped key may look at itself.
    if (!is_admin(call.principal) && *key_id != call.principal.access_key_id) {
      fail(Err::access_denied);
    }
    if (auto key = call.store.get_access_key(*key_id)) keys.push_back(std::move(*key));
  } else {
    if (!is_admin(call.principal)) fail(Err::access_denied);
    keys = check(call.store.list_access_keys());
    std::ranges::sort(keys, {}, &store::AccessKey::id);
  }
  std::size_t max_items = 1000;
  if (const auto* text = param(params, "MaxItems")) {
    const auto value = parse_seq(*text);
    if (!value || *value < 1 || *value > 1000)
      fail(Err::invalid_argument, "MaxItems must be 1-1000.");
    max_items = static_cast<std::size_t>(*value);
  }
  if (const auto* marker = param(params, "Marker"); marker && !marker->empty()) {
    std::erase_if(keys, [&](const auto& key) { return key.id <= *marker; });
  }
  const bool truncated = keys.size() > max_items;
  if (truncated) keys.resize(max_items);

  nlohmann::ordered_json items = nlohmann::ordered_json::array();
  for (const auto& key : keys) {
    items.push_back({{"access_key_id", key.id},
                     {"created_at", rfc3339_nano(key.created)},
                     {"creator", "root"},
                     {"human_creator", "root"},
                     {"namespace_id", "tfork"},
                     {"status", key.active ? "active" : "inactive"},
                     {"username", key.name},
                     {"buckets_role", roles_json(key.roles)}});
  }
  nlohmann::ordered_json body{{"IsTruncated", truncated},
                              {"Marker", truncated ? keys.back().id : std::string{}},
                              {"Keys", std::move(items)}};
  return json_response(200, body.dump());
}

}  // namespace

bool is_iam_request(const Request& request, const Target& target, std::string_view body) {
  if (request.method != "POST" || !target.bucket.empty()) return false;
  if (target.has("Action") || target.has("Detailed")) return true;
  if (!is_form(request)) return false;
  const auto form = parse_query(body);
  return form && std::ranges::any_of(*form, [](const auto& p) { return p.first == "Action"; });
}

Response iam_dispatch(Call& call) {
  const auto params = iam_params(call);
  const auto* action_param = param(params, "Action");
  const std::string action = action_param ? *action_param : std::string("ListAccessKeys");
  if (action == "CreateAccessKeyWithBucketsRole") return create_key(call, params, true);
  if (action == "CreateAccessKey") return create_key(call, params, false);
  if (action == "UpdateAccessKeyWithBucketsRole") return update_key(call, params);
  if (action == "DeleteAccessKey") return delete_key(call, params);
  if (action == "ListAccessKeys") return list_keys(call, params);
  if (action == "RotateAccessKey") return rotate_key(call, params);
  fail(Err::invalid_action, "The action " + action + " is not supported by tfork serve.");
}

}  // namespace tfork::server
