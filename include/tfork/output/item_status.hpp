// SPDX-License-Identifier: Apache-2.0
#pragma once
// The outcome of one item of a batch (a bucket deleted, a snapshot deleted, a fork created or
// torn down): a status word and, when the item failed, why. One JSON form and one table form
// for every batch command (cli.md §6: "details per item").

#include "tfork/core/error.hpp"
#include "tfork/output/render.hpp"

#include <optional>
#include <string>

namespace tfork::output {

struct ItemStatus {
  std::string status;          // "deleted", "already-gone", "failed", "created", ...
  std::optional<Error> error;  // set when the item failed
};

// `{"code", "message", "http_status"}` of a failed item (http_status null without a response).
Json item_error_json(const Error& error);

// Adds `"status"`, then the fields of `details` (e.g. teardown's "key"), then `"error"` when
// set, to `entry`, which already names the item.
Json item_json(Json entry, const ItemStatus& item, const Json& details = Json::object());

// The STATUS cell of a table row: the status word, except "not-found", which a person reads
// as "not found (nothing to do)" (a typo and a finished re-run look alike otherwise).
std::string status_cell(std::string_view status);

// The ERROR cell of a table row: "message (code)", or "-" (absent) when the item did not fail.
std::string item_error_text(const ItemStatus& item);

}  // namespace tfork::output
