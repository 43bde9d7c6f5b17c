// SPDX-License-Identifier: Apache-2.0
#include "raw_request.hpp"

#include "tfork/crypto/hash.hpp"

#include <stdexcept>
#include <vector>

namespace tfork::sigv4::testing {
namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (line.ends_with('\r')) line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

}  // namespace

RawRequest parse_raw_request(std::string_view text) {
  // Some files start with a stray blank line; it is not part of the request.
  while (text.starts_with('\n'))
    text.remove_prefix(1);
  const std::vector<std::string_view> lines = split_lines(text);
  if (lines.empty()) throw std::runtime_error("empty request file");

  RawRequest out;
  const std::string_view request_line = lines.front();
  const std::size_t first_space = request_line.find(' ');
  const std::size_t last_space = request_line.rfind(' ');
  if (first_space == std::string_view::npos || last_space <= first_space)
    throw std::runtime_error("bad request line: " + std::string(request_line));
  out.method = request_line.substr(0, first_space);
  const std::string_view target =
      request_line.substr(first_space + 1, last_space - first_space - 1);
  const std::size_t question = target.find('?');
  out.path = target.substr(0, question);
  if (question != std::string_view::npos) out.query = target.substr(question + 1);

  std::size_t index = 1;
  for (; index < lines.size(); ++index) {
    const std::string_view line = lines[index];
    if (line.empty()) break;
    if (line.front() == ' ' || line.front() == '\t') {
      if (out.headers.empty()) throw std::runtime_error("continuation line before any header");
      out.headers.back().second += ' ';
      out.headers.back().second += line;
      continue;
    }
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos)
      throw std::runtime_error("header line without ':': " + std::string(line));
    out.headers.emplace_back(std::string(line.substr(0, colon)),
                             std::string(line.substr(colon + 1)));
  }
  // The body is everything after the blank line, byte for byte.
  for (std::size_t i = index + 1; i < lines.size(); ++i) {
    if (i > index + 1) out.body.push_back('\n');
    out.body += lines[i];
  }
  return out;
}

Request to_request(const RawRequest& raw) {
  return Request{.method = raw.method,
                 .path = raw.path,
                 .query = raw.query,
                 .headers = raw.headers,
                 .payload_hash = crypto::sha256_hex(raw.body)};
}

}  // namespace tfork::sigv4::testing
