// SPDX-License-Identifier: Apache-2.0
#include "vector_files.hpp"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace tfork::sigv4::testing {

std::filesystem::path shared_dir() {
  if (const char* dir = std::getenv("TFORK_SHARED_DIR"); dir && *dir) return dir;
  return TFORK_SHARED_DIR;
}

std::optional<std::filesystem::path> vector_path(std::string_view relative) {
  std::filesystem::path path = shared_dir() / "sigv4" / relative;
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return std::nullopt;
  return path;
}

std::filesystem::path require_vectors(std::string_view relative) {
  if (auto path = vector_path(relative)) return *path;
  std::cerr << "SKIP: " << (shared_dir() / "sigv4" / relative).string()
            << " not found (set TFORK_SHARED_DIR to the shared/ folder)\n";
  std::cerr.flush();
  std::_Exit(125);
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream stream(file, std::ios::binary);
  if (!stream) throw std::runtime_error("cannot read " + file.string());
  std::ostringstream content;
  content << stream.rdbuf();
  return content.str();
}

Clock::time_point parse_utc(std::string_view text) {
  std::string digits;
  for (const char c : text)
    if (c != '-' && c != ':') digits.push_back(c);
  if (digits.size() != 16 || digits[8] != 'T' || digits[15] != 'Z')
    throw std::runtime_error("bad UTC time: " + std::string(text));
  const auto number = [&](std::size_t position, std::size_t length) {
    return std::stoi(digits.substr(position, length));
  };
  const std::chrono::year_month_day date{std::chrono::year{number(0, 4)},
                                         std::chrono::month{static_cast<unsigned>(number(4, 2))},
                                         std::chrono::day{static_cast<unsigned>(number(6, 2))}};
  return std::chrono::sys_days{date} + std::chrono::hours{number(9, 2)} +
         std::chrono::minutes{number(11, 2)} + std::chrono::seconds{number(13, 2)};
}

namespace {

template <typename Visit>
void for_each_parameter(std::string_view query, Visit visit) {
  std::size_t start = 0;
  while (start <= query.size()) {
    std::size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    visit(query.substr(start, end - start));
    start = end + 1;
  }
}

std::string_view name_of(std::string_view parameter) {
  return parameter.substr(0, parameter.find('='));
}

}  // namespace

std::string query_parameter(std::string_view query, std::string_view name) {
  std::string value;
  for_each_parameter(query, [&](std::string_view parameter) {
    if (name_of(parameter) == name && parameter.size() > name.size())
      value = parameter.substr(name.size() + 1);
  });
  return value;
}

std::string query_without(std::string_view query, std::string_view name) {
  std::string out;
  for_each_parameter(query, [&](std::string_view parameter) {
    if (parameter.empty() || name_of(parameter) == name) return;
    if (!out.empty()) out.push_back('&');
    out += parameter;
  });
  return out;
}

}  // namespace tfork::sigv4::testing
