// SPDX-License-Identifier: Apache-2.0
#include "tfork/server/http_types.hpp"

#include <algorithm>
#include <unistd.h>

namespace tfork::server {

OpenFile::~OpenFile() {
  if (fd_ >= 0) ::close(fd_);
}

const std::string* find_header(const std::vector<Header>& headers, std::string_view name) {
  for (const auto& [header_name, value] : headers) {
    if (iequals(header_name, name)) return &value;
  }
  return nullptr;
}

std::string Request::header_or(std::string_view name, std::string_view fallback) const {
  const auto* value = header(name);
  return value ? *value : std::string(fallback);
}

std::optional<std::string> Request::joined_header(std::string_view name,
                                                  std::string_view separator) const {
  std::optional<std::string> joined;
  for (const auto& [header_name, value] : headers) {
    if (!iequals(header_name, name)) continue;
    if (joined)
      *joined += separator;
    else
      joined.emplace();
    *joined += value;
  }
  return joined;
}

void Response::set_header(std::string name, std::string value) {
  std::erase_if(headers, [&](const Header& header) { return iequals(header.first, name); });
  headers.emplace_back(std::move(name), std::move(value));
}

}  // namespace tfork::server
