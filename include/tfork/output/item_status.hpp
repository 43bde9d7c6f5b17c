// SPDX-License-Identifier: Apache-2.0
#pragma once
// The outcome of one item of a batch (a bucket deleted, a snapshot deleted, a fork created or
// torn down): a typed status and, when the item failed or was left alone, why. One word per
// status, one JSON form and one table form for every batch command (cli.md §6: "details per
// item").

#include "tfork/core/error.hpp"
#include "tfork/output/render.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace tfork::output {

// Every status word of cli.md §4–§6 and §10, for forks, buckets, snapshots and keys alike.
enum class Status {
  pending,        // a fork requested (or about to be) whose answer never came: it may exist
  created,        // made by this run
  exists,         // adopted with --exist-ok: it existed as a fork of the same source
  deleted,        // deleted by this run (a key: revoked)
  already_gone,   // a delete of something that was already gone: done
  not_found,      // named, but it was never there (nothing to do)
  skipped,        // left alone on purpose (not a fork, a fork parent, …): see the error
  kept,           // left in place by a rule (prune --unused, a key with roles elsewhere)
  would_delete,   // --dry-run: what a delete would remove
  rolled_back,    // made by this run, then removed again after another item failed
  not_attempted,  // never asked for: the run stopped before it
  interrupted,    // Ctrl-C or SIGTERM came before its answer: it may or may not have happened
  none,           // no such thing to act on (a fork without a key)
  failed,         // see the error
};

// The word a document and a table show ("already-gone"); the one place statuses become text.
std::string_view status_name(Status status);

struct ItemStatus {
  Status status = Status::failed;
  std::optional<Error> error;  // set when the item failed or was left alone, and why
};

// `{"code", "message", "http_status"}` of a failed item (http_status null without a response).
Json item_error_json(const Error& error);

// Adds `"status"`, then the fields of `details` (e.g. teardown's "key"), then `"error"` when
// set, to `entry`, which already names the item.
Json item_json(Json entry, const ItemStatus& item, const Json& details = Json::object());

// The STATUS cell of a table row: the status word, except "not-found", which a person reads
// as "not found (nothing to do)" (a typo and a finished re-run look alike otherwise).
std::string status_cell(Status status);

// The ERROR cell of a table row: "message (code)", or "-" (absent) when the item did not fail.
std::string item_error_text(const ItemStatus& item);

}  // namespace tfork::output
