// SPDX-License-Identifier: Apache-2.0
#include "tfork/output/item_status.hpp"

namespace tfork::output {

Json item_error_json(const Error& error) {
  return Json{{"code", error.code},
              {"message", error.message},
              {"http_status", error.http_status ? Json(error.http_status) : Json()}};
}

Json item_json(Json entry, const ItemStatus& item, const Json& details) {
  entry["status"] = item.status;
  for (const auto& [name, value] : details.items())
    entry[name] = value;
  if (item.error) entry["error"] = item_error_json(*item.error);
  return entry;
}

std::string status_cell(std::string_view status) {
  if (status == "not-found") return "not found (nothing to do)";
  return std::string(status);
}

std::string item_error_text(const ItemStatus& item) {
  if (!item.error) return "-";
  return item.error->code.empty() ? item.error->message
                                  : item.error->message + " (" + item.error->code + ")";
}

}  // namespace tfork::output
