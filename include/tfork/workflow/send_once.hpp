// SPDX-License-Identifier: Apache-2.0
#pragma once
// Operations that must not happen twice — a snapshot taken, a merge, a rebase — are never
// sent again by the transport once they may have reached the server (issue 23 §3,
// http::Request::resend_if_unanswered). When such a send ends without a clear answer, the
// state is read first, and the operation is sent again only when it shows nothing happened.

#include "tfork/tigris/client.hpp"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace tfork::workflow {

// A failure after which the operation may still have been carried out: a transfer that broke
// or timed out (not one refused before it left: DNS, connect, TLS, or cancelled), or an answer
// 500, 502 or 504.
bool may_have_happened(const http::Result& result);

// What the state says of an operation that may have happened: its version ("" when the state
// shows it happened but not which version it made), or nullopt when it did not happen.
using Landed = std::function<std::optional<std::string>()>;

// The operation's answer: `operation` sent once; when that ends in may_have_happened(),
// `landed()` is asked, and a yes stands in for the answer (a 200 carrying the version found
// as X-Tigris-Snapshot-Version), a no sends it once more.
http::Result send_once(tigris::Client& client, const tigris::Operation& operation,
                       const Landed& landed);

// Landed for CreateBucketSnapshot with a name: the newest snapshot of `bucket` of that name
// made since `not_before` (the server's versions are Unix nanoseconds; a skew margin of
// the SigV4 limit is allowed).
Landed snapshot_named(tigris::Client& client, std::string bucket, std::string name,
                      std::chrono::system_clock::time_point not_before);

// CreateBucketSnapshot of `bucket`: a named one through send_once (snapshot_named); an unnamed
// one cannot be told from the others, so it is sent once and an unclear failure stays one.
http::Result send_take_snapshot(tigris::Client& client, std::string_view bucket,
                                const std::optional<std::string>& name);

}  // namespace tfork::workflow
