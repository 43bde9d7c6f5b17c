// SPDX-License-Identifier: Apache-2.0
#include "tfork/output/item_status.hpp"

namespace tfork::output {

std::string_view status_name(Status status) {
  switch (status) {
    case Status::pending:
      return "pending";
    case Status::created:
      return "created";
    case Status::exists:
      return "exists";
    case Status::deleted:
      return "deleted";
    case Status::already_gone:
      return "already-gone";
    case Status::not_found:
      return "not-found";
    case Status::skipped:
      return "skipped";
    case Status::kept:
      return "kept";
    case Status::would_delete:
      return "would-delete";
    case Status::rolled_back:
      return "rolled-back";
    case Status::not_attempted:
      return "not-attempted";
    case Status::interrupted:
      return "interrupted";
    case Status::none:
      return "none";
    case Status::failed:
      return "failed";
  }
  return "failed";
}

Json item_error_json(const Error& error) {
  return Json{{"code", error.code},
              {"message", error.message},
              {"http_status", error.http_status ? Json(error.http_status) : Json()}};
}

Json item_json(Json entry, const ItemStatus& item, const Json& details) {
  entry["status"] = status_name(item.status);
  for (const auto& [name, value] : details.items())
    entry[name] = value;
  if (item.error) entry["error"] = item_error_json(*item.error);
  return entry;
}

std::string status_cell(Status status) {
  if (status == Status::not_found) return "not found (nothing to do)";
  return std::string(status_name(status));
}

std::string item_error_text(const ItemStatus& item) {
  if (!item.error) return "-";
  return item.error->code.empty() ? item.error->message
                                  : item.error->message + " (" + item.error->code + ")";
}

}  // namespace tfork::output
