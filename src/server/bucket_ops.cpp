// SPDX-License-Identifier: Apache-2.0
// Bucket, snapshot and fork operations (tigris-wire §2, server-design §6.3).
#include "tfork/core/ascii.hpp"
#include "tfork/rules/snapshot_name.hpp"
#include "tfork/server/operations.hpp"
#include "tfork/server/time_format.hpp"
#include "tfork/server/xml_render.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace tfork::server {
namespace {

constexpr std::string_view k_owner = "tfork";
constexpr int k_default_max_buckets = 1000;
constexpr int k_max_max_buckets = 10000;

bool header_true(const Call& call, std::string_view name) {
  const auto* value = call.header(name);
  return value && iequals(*value, "true");
}

Response created(std::string_view bucket) {
  Response response;
  // Built by append: g++ 12 warns falsely (-Wrestrict) about "/" + std::string(...) here.
  std::string location = "/";
  location += bucket;
  response.set_header("Location", location);
  return response;
}

// BucketAlreadyOwnedByYou for callers with rights on the name, BucketAlreadyExists otherwise
// (the choice is annotated in errors.hpp).
[[noreturn]] void fail_exists(const Call& call, std::string_view bucket) {
  S3Error error = make_error(has_any_role(call.principal, bucket) ? Err::bucket_already_owned
                                                                  : Err::bucket_already_exists);
  error.bucket = std::string(bucket);
  fail(std::move(error));
}

template <class T>
T check_create(const Call& call, store::Result<T> result, std::string_view bucket) {
  if (!result && result.error().code == store::StoreErrc::bucket_exists) fail_exists(call, bucket);
  return check(std::move(result), bucket);
}

// max-buckets (1..10000; tigris-wire §2.4 leaves the default open, S3's is 1000... here too).
int max_buckets(const Call& call) {
  const auto* text = call.target.get("max-buckets");
  if (!text) return k_default_max_buckets;
  const auto value = parse_seq(*text);
  if (!value || *value < 1 || *value > k_max_max_buckets) {
    fail(Err::invalid_argument, "max-buckets must be an integer between 1 and 10000.");
  }
  return static_cast<int>(*value);
}

nlohmann::ordered_json fork_info(const store::BucketInfo& info) {
  nlohmann::ordered_json parents = nlohmann::ordered_json::array();
  if (info.fork_source) {
    const auto snapshot = info.fork_snapshot.value_or(0);
    parents.push_back({{"BucketName", *info.fork_source},
                       {"ForkCreatedAt", rfc3339_nano(info.fork_created)},
                       {"Snapshot", std::to_string(snapshot)},
                       {"SnapshotCreatedAt", rfc3339_nano(snapshot)}});
  }
  return {{"HasChildren", info.has_children}, {"Parents", std::move(parents)}};
}

// The XML and JSON bucket listings (S3 ListAllMyBucketsResult; tigris-wire §2.8b).
Response render_buckets(const Call& call, const std::vector<store::BucketInfo>& buckets,
                        const std::optional<std::string>& continuation, bool always_fork_info,
                        const std::optional<nlohmann::ordered_json>& stats = std::nullopt) {
  if (call.wants_json()) {
    nlohmann::ordered_json items = nlohmann::ordered_json::array();
    for (const auto& bucket : buckets) {
      nlohmann::ordered_json item{{"Name", bucket.name},
                                  {"CreationDate", rfc3339_nano(bucket.created)},
                                  {"Regions", ""},
                                  {"Type", bucket.snapshot_enabled ? "Snapshot" : "Regular"},
                                  {"Visibility", {{"IsPublic", false}}}};
      if (always_fork_info || bucket.fork_source || bucket.has_children) {
        item["ForkInfo"] = fork_info(bucket);
      }
      items.push_back(std::move(item));
    }
    nlohmann::ordered_json body;
    if (continuation) body["ContinuationToken"] = *continuation;
    body["Owner"] = {{"DisplayName", k_owner}, {"ID", k_owner}};
    if (stats) body["Stats"] = *stats;
    body["Buckets"] = {{"Bucket", std::move(items)}};
    return json_response(200, body.dump());
  }
  pugi::xml_document document;
  auto root = s3_root(document, "ListAllMyBucketsResult");
  auto owner = root.append_child("Owner");
  add_text(owner, "ID", k_owner);
  add_text(owner, "DisplayName", k_owner);
  auto list = root.append_child("Buckets");
  for (const auto& bucket : buckets) {
    auto node = list.append_child("Bucket");
    add_text(node, "Name", bucket.name);
    add_text(node, "CreationDate", iso8601_ms(bucket.created));
  }
  if (continuation) add_text(root, "ContinuationToken", *continuation);
  return xml_response(200, to_string(document));
}

// IncludeStats=true (tigris-wire §2.8b; what `tigris stat` shows): every bucket the caller
// sees, not only the page. The local store keeps one visible version per key, so the total
// and the unique object counts are the same number.
nlohmann::ordered_json account_stats(const Call& call,
                                     const std::vector<store::BucketInfo>& buckets) {
  std::int64_t objects = 0, bytes = 0;
  for (const auto& bucket : buckets) {
    const auto stats = call.store.bucket_stats(bucket.name);
    if (!stats) continue;  // deleted meanwhile
    objects += stats->objects;
    bytes += stats->bytes;
  }
  return {{"ActiveBuckets", buckets.size()},
          {"TotalObjects", objects},
          {"TotalStorageBytes", bytes},
          {"TotalUniqueObjects", objects}};
}

// Name-ordered pagination of bucket listings: the token is the last name returned.
std::vector<store::BucketInfo> page_by_name(const Call& call,
                                            std::vector<store::BucketInfo> buckets,
                                            std::optional<std::string>& continuation) {
  const auto limit = static_cast<std::size_t>(max_buckets(call));
  if (const auto* token = call.target.get("continuation-token"); token && !token->empty()) {
    std::erase_if(buckets, [&](const auto& bucket) { return bucket.name <= *token; });
  }
  if (buckets.size() > limit) {
    buckets.resize(limit);
    continuation = buckets.back().name;
  }
  return buckets;
}

// ListBucketSnapshots (tigris-wire §2.4): snapshots as pseudo-buckets, newest first; the
// token is the last version returned and the next page holds strictly older versions.
Response list_snapshots(Call& call, const std::string& bucket) {
  require(call, bucket, Access::snapshot);
  auto snapshots = check(call.store.list_snapshots(bucket), bucket);
  std::ranges::sort(snapshots, [](const auto& a, const auto& b) { return a.version > b.version; });
  if (const auto* token = call.target.get("continuation-token"); token && !token->empty()) {
    const auto after = parse_seq(*token);
    if (!after) fail(Err::invalid_token);
    std::erase_if(snapshots, [&](const auto& snapshot) { return snapshot.version >= *after; });
  }
  const auto limit = static_cast<std::size_t>(max_buckets(call));
  std::optional<std::string> continuation;
  if (snapshots.size() > limit) {
    snapshots.resize(limit);
    continuation = std::to_string(snapshots.back().version);
  }
  pugi::xml_document document;
  auto root = s3_root(document, "ListAllMyBucketsResult");
  auto owner = root.append_child("Owner");
  add_text(owner, "ID", k_owner);
  add_text(owner, "DisplayName", k_owner);
  auto list = root.append_child("Buckets");
  for (const auto& snapshot : snapshots) {
    auto node = list.append_child("Bucket");
    auto name = std::to_string(snapshot.version);
    if (snapshot.name) name += "; name=" + *snapshot.name;
    add_text(node, "Name", name);
    add_text(node, "CreationDate", rfc3339_nano(snapshot.created));
  }
  if (continuation) {
    add_text(root, "ContinuationToken", *continuation);
  } else if (const auto* sent = call.target.get("continuation-token");
             sent && !sent->empty() && call.variance.has(Quirk::snapshot_token_echo)) {
    add_text(root, "ContinuationToken", *sent);  // the last page echoes the token it was sent
  }
  return xml_response(200, to_string(document));
}

// "true" or "true; name=<name>" (tigris-wire §2.3). The name is kept verbatim.
std::optional<std::string> snapshot_name(const Call& call, std::string_view value) {
  value = ascii::trim(value);
  if (value.size() < 4 || !iequals(value.substr(0, 4), "true")) {
    fail(Err::invalid_argument, "X-Tigris-Snapshot must be \"true\" or \"true; name=<name>\".");
  }
  value = ascii::trim(value.substr(4));
  if (value.empty()) return std::nullopt;
  if (value.front() != ';') {
    fail(Err::invalid_argument, "X-Tigris-Snapshot must be \"true\" or \"true; name=<name>\".");
  }
  value = ascii::trim(value.substr(1));
  if (!value.starts_with("name=")) {
    fail(Err::invalid_argument, "X-Tigris-Snapshot must be \"true\" or \"true; name=<name>\".");
  }
  value.remove_prefix(5);
  if (value.empty()) return std::nullopt;
  // Stored, then answered in every listing: a name the documented rule refuses is not kept.
  if (const auto problem = rules::snapshot_name_wire_problem(value)) {
    fail(Err::invalid_argument, "The snapshot name " + *problem + ".");
  }
  // Nor one that would reach a terminal as a control sequence from every listing of it.
  if (!call.variance.has(Quirk::snapshot_names_verbatim) &&
      std::ranges::any_of(value, [](unsigned char c) { return c < 0x20 || c == 0x7F; })) {
    fail(Err::invalid_argument, "The snapshot name must not contain control characters.");
  }
  return std::string(value);
}

// settings-delay: a snapshot or fork of a bucket whose snapshots were turned on a moment ago is
// refused as the bucket's old type would be.
void refuse_while_turning_on(const Call& call, std::string_view bucket) {
  if (call.variance.settings_shown(bucket, call.now) == false)
    fail(store_error({store::StoreErrc::not_snapshot_enabled, {}}, std::string(bucket)));
}

// Merge (tigris-wire §2.11): PUT /<parent> with X-Tigris-Merge-Source-Bucket: <fork>. It
// writes into the parent and reads the fork, so it needs both rights.
Response merge_fork(Call& call, const std::string& fork) {
  const auto& bucket = call.target.bucket;
  if (fork.empty()) fail(Err::invalid_argument, "X-Tigris-Merge-Source-Bucket names no bucket.");
  require(call, bucket, Access::write);
  require(call, fork, Access::read);
  const auto merged = check(call.store.merge_fork(bucket, fork), bucket);
  Response response;
  if (!call.variance.has(Quirk::merge_no_version_header))
    response.set_header("X-Tigris-Snapshot-Version", std::to_string(merged.version));
  return response;
}

// Rebase (tigris-wire §2.11): PUT /<fork> with X-Tigris-Rebase: true. The fork then sees
// the parent's current data, so the caller needs the right to fork the parent too: a key
// scoped to the fork alone cannot widen its own view of the source.
Response rebase_fork(Call& call) {
  const auto& bucket = call.target.bucket;
  require(call, bucket, Access::write);
  const auto info = check(call.store.head_bucket(bucket), bucket);
  if (!info.fork_source) {
    fail(Err::invalid_argument, "The bucket " + bucket + " is not a fork; nothing to rebase.");
  }
  require(call, *info.fork_source, Access::snapshot);
  const auto rebased = check(call.store.rebase_fork(bucket), bucket);
  Response response;
  if (!call.variance.has(Quirk::merge_no_version_header))
    response.set_header("X-Tigris-Snapshot-Version",
                        std::to_string(rebased.fork_snapshot.value_or(0)));
  return response;
}

}  // namespace

Response list_buckets(Call& call) {
  if (const auto* bucket = call.header("x-tigris-snapshot")) {
    return list_snapshots(call, std::string(ascii::trim(*bucket)));
  }
  const auto* source_header = call.header("x-tigris-fork");
  if (source_header && !call.variance.has(Quirk::fork_listing_ignores_header)) {
    const std::string source(ascii::trim(*source_header));
    require(call, source, Access::snapshot);
    auto forks = check(call.store.list_forks(source), source);
    forks = call.variance.as_seen(std::move(forks), call.now);
    std::erase_if(forks, [&](const auto& fork) { return fork.fork_source != source; });
    std::optional<std::string> continuation;
    forks = page_by_name(call, std::move(forks), continuation);
    return render_buckets(call, forks, continuation, true);
  }
  auto buckets = call.variance.as_seen(check(call.store.list_buckets()), call.now);
  // A scoped key sees only the buckets it has a role on (server-design §6.9; inference).
  std::erase_if(buckets,
                [&](const auto& bucket) { return !has_any_role(call.principal, bucket.name); });
  std::optional<nlohmann::ordered_json> stats;
  if (call.wants_json() && call.target.has("IncludeStats")) stats = account_stats(call, buckets);
  std::optional<std::string> continuation;
  buckets = page_by_name(call, std::move(buckets), continuation);
  return render_buckets(call, buckets, continuation, call.target.has("IncludeForkInfo"), stats);
}

Response create_bucket(Call& call) {
  const auto& bucket = call.target.bucket;

  // PUT on an existing bucket with X-Tigris-Snapshot takes a snapshot (tigris-wire §2.3).
  if (const auto* snapshot = call.header("x-tigris-snapshot")) {
    auto name = snapshot_name(call, *snapshot);
    require(call, bucket, Access::snapshot);
    refuse_while_turning_on(call, bucket);
    const auto info = check(call.store.take_snapshot(bucket, std::move(name)), bucket);
    auto response = created(bucket);
    response.set_header("X-Tigris-Snapshot-Version", std::to_string(info.version));
    return response;
  }
  if (const auto* source = call.header("x-tigris-merge-source-bucket")) {
    return merge_fork(call, std::string(ascii::trim(*source)));
  }
  if (const auto* rebase = call.header("x-tigris-rebase")) {
    if (!iequals(ascii::trim(*rebase), "true"))
      fail(Err::invalid_argument, "X-Tigris-Rebase must be \"true\".");
    return rebase_fork(call);
  }
  if (!valid_bucket_name(bucket)) {
    S3Error error = make_error(Err::invalid_bucket_name);
    error.bucket = bucket;
    fail(std::move(error));
  }

  const auto* source = call.header("x-tigris-fork-source-bucket");
  const auto* source_snapshot = call.header("x-tigris-fork-source-bucket-snapshot");
  if (source) {
    // tigris-wire §2.6: a fork of <source>, at the given version or at a fresh snapshot.
    std::optional<store::Seq> at;
    if (source_snapshot) {
      at = parse_seq(ascii::trim(*source_snapshot));
      if (!at) {
        fail(Err::invalid_argument,
             "X-Tigris-Fork-Source-Bucket-Snapshot must be a snapshot version (Unix ns).");
      }
    }
    const std::string source_name(ascii::trim(*source));
    // Creating a fork makes a bucket: an Editor may, a ReadOnly key never (tigris-wire §10,
    // "Scoped keys creating forks"), though it may take and list snapshots.
    require(call, source_name, Access::write);
    // A scoped key forks only under its own bucket's name plus '-', so it cannot take a
    // free name that someone else's run will need (README, serve: keys and forks).
    if (!is_admin(call.principal) && !bucket.starts_with(source_name + "-")) {
      S3Error error = make_error(Err::access_denied,
                                 "A scoped access key may only create forks "
                                 "named " +
                                     source_name + "-<suffix>.");
      error.bucket = bucket;
      fail(std::move(error));
    }
    refuse_while_turning_on(call, source_name);
    check_create(call, call.store.create_fork(bucket, source_name, at), bucket);
    call.variance.bucket_created(bucket, call.now);
    if (call.variance.answer_fork_conflict(source_name)) {
      S3Error error = make_error(Err::operation_aborted);
      error.bucket = bucket;
      fail(std::move(error));
    }
    return created(bucket);
  }
  if (source_snapshot) {
    fail(Err::invalid_argument,
         "X-Tigris-Fork-Source-Bucket-Snapshot requires X-Tigris-Fork-Source-Bucket.");
  }
  // A plain bucket belongs to the namespace: only root or a NamespaceAdmin creates one.
  if (!is_admin(call.principal)) {
    auto existing = call.store.head_bucket(bucket);
    if (existing && has_any_role(call.principal, bucket)) fail_exists(call, bucket);
    S3Error error = make_error(Err::access_denied,
                               "Only root or a NamespaceAdmin key creates "
                               "buckets; a scoped key may create forks.");
    error.bucket = bucket;
    fail(std::move(error));
  }
  check_create(call,
               call.store.create_bucket(bucket, header_true(call, "x-tigris-enable-snapshot")),
               bucket);
  call.variance.bucket_created(bucket, call.now);
  return created(bucket);
}

Response head_bucket(Call& call) {
  const auto& bucket = call.target.bucket;
  require(call, bucket, Access::read);
  auto found = call.store.head_bucket(bucket);
  if (call.variance.hidden(bucket, call.now)) {
    fail(store_error({store::StoreErrc::no_such_bucket, {}}, bucket));
  }
  if (!found && found.error().code == store::StoreErrc::no_such_bucket) {
    if (auto gone = call.variance.lingering(bucket, call.now)) found = std::move(*gone);
  }
  auto info = check(std::move(found), bucket);
  for (const auto& gone : call.variance.all_lingering(call.now)) {
    if (gone.fork_source == bucket) info.has_children = true;  // not yet seen to be gone
  }
  Response response;
  // tigris-wire §2.7: always present; fork headers only on forks; parent flag only when set.
  const bool shown = call.variance.settings_shown(bucket, call.now).value_or(info.snapshot_enabled);
  response.set_header("X-Tigris-Enable-Snapshot", shown ? "true" : "false");
  if (info.fork_source) {
    response.set_header("X-Tigris-Fork-Source-Bucket", *info.fork_source);
    response.set_header("X-Tigris-Fork-Source-Bucket-Snapshot",
                        std::to_string(info.fork_snapshot.value_or(0)));
  }
  if (info.has_children) response.set_header("X-Tigris-Is-Fork-Parent", "true");
  response.set_header("x-amz-bucket-region", "auto");
  return response;
}

Response delete_bucket(Call& call) {
  const auto& bucket = call.target.bucket;
  Response response;
  response.status = 204;

  // tigris-wire §2.5: with X-Tigris-Snapshot-Version only that snapshot goes.
  if (const auto* version = call.header("x-tigris-snapshot-version")) {
    const auto seq = parse_seq(ascii::trim(*version));
    if (!seq) fail(Err::invalid_argument, "X-Tigris-Snapshot-Version must be a snapshot version.");
    require(call, bucket, Access::snapshot_delete);
    auto deleted = call.store.delete_snapshot(bucket, *seq);
    if (!deleted && deleted.error().code == store::StoreErrc::no_such_snapshot &&
        call.variance.has(Quirk::snapshot_gone_400)) {
      fail(Err::invalid_argument, "The snapshot version is not valid for this bucket.");
    }
    check(std::move(deleted), bucket);
    return response;
  }
  // tigris-wire §2.10: both spellings of force delete are in use.
  const bool force =
      header_true(call, "tigris-force-delete") || header_true(call, "x-tigris-force-delete");
  require(call, bucket, Access::bucket_admin);
  auto before = call.store.head_bucket(bucket);
  // With a consistency delay, forks deleted a moment ago still hold their parent.
  const auto lingering = call.variance.all_lingering(call.now);
  const bool child_lingers =
      std::ranges::any_of(lingering, [&](const auto& gone) { return gone.fork_source == bucket; });
  auto result = child_lingers && before
                    ? store::Result<void>(std::unexpected(store::StoreError{
                          store::StoreErrc::bucket_has_forks, "forks are still being deleted"}))
                    : call.store.delete_bucket(bucket, force);
  if (!result && result.error().code == store::StoreErrc::bucket_has_forks) {
    // Name the forks, so the user knows what to delete first.
    std::string names;
    if (auto forks = call.store.list_forks(bucket)) {
      for (const auto& fork : *forks)
        names += (names.empty() ? "" : ", ") + fork.name;
    }
    S3Error error = make_error(
        call.variance.has(Quirk::parent_delete_400) ? Err::bucket_has_children
                                                    : Err::bucket_has_forks,
        names.empty() ? std::string{} : "The bucket has forks; delete them first: " + names);
    error.bucket = bucket;
    fail(std::move(error));
  }
  check(std::move(result), bucket);
  if (before) call.variance.bucket_deleted(std::move(*before), call.now);
  return response;
}

Response bucket_metadata(Call& call) {
  const auto& bucket = call.target.bucket;
  require(call, bucket, Access::read);
  const auto info = check(call.store.head_bucket(bucket), bucket);
  // tigris-wire §2.8a. The counts are exact here (Tigris estimates them); one visible version
  // per key, as ListObjectVersions answers, so all-versions and unique rows are equal.
  const auto stats = check(call.store.bucket_stats(bucket), bucket);
  nlohmann::ordered_json body{{"name", info.name},
                              {"type", info.snapshot_enabled ? 1 : 0},
                              {"storage_class", "STANDARD"},
                              {"object_regions", ""},
                              {"created_at", rfc3339_nano(info.created)}};
  if (info.fork_source || info.has_children) body["ForkInfo"] = fork_info(info);
  body["estimated_unique_rows"] = stats.objects;
  body["estimated_size"] = stats.bytes;
  body["estimated_rows"] = stats.objects;
  body["soft_delete"] = {{"enabled", false}};
  body["protection"] = {{"protected", false}};
  return json_response(200, body.dump());
}

Response patch_bucket(Call& call) {
  const auto& bucket = call.target.bucket;
  require(call, bucket, Access::bucket_admin);
  const auto body = nlohmann::json::parse(call.body.data, nullptr, false);
  if (body.is_discarded() || !body.is_object())
    fail(Err::invalid_argument, "The body must be JSON.");
  if (const auto type = body.find("type"); type != body.end()) {
    // tigris-wire §2.2: 1 = Snapshot, 0 = Regular.
    if (!type->is_number_integer() || (*type != 0 && *type != 1)) {
      fail(Err::invalid_argument, "type must be 0 (Regular) or 1 (Snapshot).");
    }
    const auto before = check(call.store.head_bucket(bucket), bucket).snapshot_enabled;
    check(call.store.set_snapshot_enabled(bucket, *type == 1), bucket);
    if (before != (*type == 1)) call.variance.settings_changed(bucket, before, call.now);
  } else {
    check(call.store.head_bucket(bucket), bucket);
  }
  return json_response(200, R"({"status":"success"})");
}

Response bucket_location(Call& call) {
  const auto& bucket = call.target.bucket;
  require(call, bucket, Access::read);
  check(call.store.head_bucket(bucket), bucket);
  pugi::xml_document document;
  auto root = s3_root(document, "LocationConstraint");
  root.append_child(pugi::node_pcdata).set_value("auto");
  return xml_response(200, to_string(document));
}

Response bucket_versioning(Call& call) {
  const auto& bucket = call.target.bucket;
  require(call, bucket, Access::read);
  const auto info = check(call.store.head_bucket(bucket), bucket);
  pugi::xml_document document;
  auto root = s3_root(document, "VersioningConfiguration");
  // Snapshot-enabled buckets are implicitly versioned (tigris-wire §2.1).
  if (info.snapshot_enabled) add_text(root, "Status", "Enabled");
  return xml_response(200, to_string(document));
}

}  // namespace tfork::server
