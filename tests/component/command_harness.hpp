// SPDX-License-Identifier: Apache-2.0
#pragma once
// Shared by the command component tests (bucket, snapshot, fork head/ls): a Client over the
// recording FakeTransport, and readers for the recorded wire requests.
// The commands come from the tfork_cli library (include/tfork/commands/*.hpp).

#include "tfork/tigris/client.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "fake_transport.hpp"
#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace tfork::testing::commands {

inline const std::string k_endpoint = "http://127.0.0.1:9000";

inline tigris::ClientSettings settings() {
  return {k_endpoint, k_endpoint, "auto", true, {"AKIDTEST", "secret-test", ""}};
}

inline tigris::Client::Clock fixed_clock() {
  return [] { return sigv4::Clock::time_point(std::chrono::seconds(1'751'631'910)); };
}

// The path of a recorded URL ("/bucket"), without the query.
inline std::string path_of(const http::Request& request) {
  auto rest = request.url.substr(k_endpoint.size());
  return rest.substr(0, rest.find('?'));
}

// The raw query of a recorded URL ("x-id=ListBuckets&..."), "" when none.
inline std::string query_of(const http::Request& request) {
  const auto question = request.url.find('?');
  return question == std::string::npos ? "" : request.url.substr(question + 1);
}

inline std::string header_of(const http::Request& request, std::string_view name) {
  auto value = http::find_header(request.headers, name);
  return value ? std::string(*value) : std::string("<absent>");
}

// The lowercased names in the Authorization header's SignedHeaders.
inline std::set<std::string> signed_headers(const http::Request& request) {
  const auto authorization = header_of(request, "authorization");
  std::set<std::string> names;
  const auto start = authorization.find("SignedHeaders=");
  if (start == std::string::npos) return names;
  auto list = authorization.substr(start + 14);
  list = list.substr(0, list.find(','));
  std::stringstream stream(list);
  for (std::string name; std::getline(stream, name, ';');)
    names.insert(name);
  return names;
}

inline http::Response s3_error(int status, std::string_view code) {
  return http::Response{
      status,
      {{"Content-Type", "application/xml"}, {"x-amz-request-id", "REQ-TEST"}},
      fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{0}</Code>"
                  "<Message>{0} message</Message></Error>",
                  code),
      1};
}

inline http::Response ok(int status = 200, http::Headers headers = {}, std::string body = {}) {
  return http::Response{status, std::move(headers), std::move(body), 1};
}

// The kind of the TforkError that ACTION throws (a test failure when it throws none).
inline ErrorKind failure_kind(const std::function<void()>& action) {
  try {
    action();
  } catch (const TforkError& error) {
    return error.error().kind;
  }
  FAIL("no TforkError");
  return ErrorKind::other;
}

}  // namespace tfork::testing::commands
