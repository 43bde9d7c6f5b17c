// SPDX-License-Identifier: Apache-2.0
// send() and send_all() of every Transport, over its one send_batch (tfork/http/transport.hpp
// writes down the contract they rely on).

#include "tfork/http/transport.hpp"

#include <optional>
#include <utility>

namespace tfork::http {
namespace {

// A fixed list of requests as a batch: taken in input order, each result kept at its index.
class ListBatch final : public Batch {
 public:
  ListBatch(std::span<const Request> requests,
            const std::function<void(std::size_t, const Result&)>& on_done)
      : requests_(requests), on_done_(on_done), results_(requests.size()) {}

  std::optional<Ready> next() override {
    if (taken_ == requests_.size()) return std::nullopt;
    const auto id = taken_++;
    return Ready{id, &requests_[id]};
  }
  std::optional<std::chrono::steady_clock::time_point> next_ready_at() const override {
    return std::nullopt;
  }
  bool exhausted() const override { return taken_ == requests_.size(); }
  void done(std::size_t id, Result result) override {
    results_[id] = std::move(result);
    if (on_done_) on_done_(id, *results_[id]);
  }

  // The results in input order. A request send_batch never took (it was cancelled first)
  // ends as cancelled, never sent, with its on_done call like any other.
  std::vector<Result> results() && {
    std::vector<Result> out;
    out.reserve(results_.size());
    for (std::size_t id = 0; id < results_.size(); ++id) {
      if (!results_[id]) done(id, std::unexpected(cancelled_error(requests_[id], 0)));
      out.push_back(std::move(*results_[id]));
    }
    return out;
  }

 private:
  std::span<const Request> requests_;
  const std::function<void(std::size_t, const Result&)>& on_done_;
  std::vector<std::optional<Result>> results_;
  std::size_t taken_ = 0;
};

}  // namespace

std::string host_port(std::string_view url) {
  const auto scheme_end = url.find("://");
  const std::string_view scheme =
      scheme_end == std::string_view::npos ? std::string_view{} : url.substr(0, scheme_end);
  std::string_view authority =
      scheme_end == std::string_view::npos ? url : url.substr(scheme_end + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  const auto bracket = authority.rfind(']');
  const auto colon = authority.rfind(':');
  const bool has_port =
      colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket);
  std::string out(authority);
  if (!has_port) out += scheme == "https" ? ":443" : ":80";
  return out;
}

TransportError cancelled_error(const Request& request, int attempts) {
  return TransportError{TransportError::Kind::cancelled,
                        "request to " + host_port(request.url) + " cancelled", attempts};
}

Result Transport::send(const Request& request) {
  return std::move(send_all(std::span<const Request>(&request, 1), 1).front());
}

std::vector<Result> Transport::send_all(
    std::span<const Request> requests, std::size_t max_parallel,
    const std::function<void(std::size_t, const Result&)>& on_done) {
  ListBatch batch(requests, on_done);
  send_batch(batch, max_parallel);
  return std::move(batch).results();
}

}  // namespace tfork::http
