// SPDX-License-Identifier: Apache-2.0
#pragma once
// The one pager of every paged listing (ListBuckets with or without X-Tigris-Fork,
// ListBucketSnapshots): a continuation token in, a page and the next token out, until the
// server sends no token (tigris-wire.md §2.4, §2.8c).

#include "tfork/core/error.hpp"
#include "tfork/tigris/client.hpp"

#include <optional>
#include <string>

namespace tfork::tigris {

// Sends `make_operation(token)` ("" first), parses the answer with `parse` (a
// std::expected<Page, std::string>, Page having a `continuation_token`) and hands each page
// to `on_page`, which returns false to stop early. `first`, when given, is the answer to
// `make_operation("")` already sent (with a batch of other requests), used instead of sending
// it again. Throws TforkError for a failed request, an unreadable page, or a server that
// repeats the token it was just given (which would otherwise page forever).
template <class MakeOperation, class Parse, class OnPage>
void page_through(Client& client, MakeOperation make_operation, Parse parse, OnPage on_page,
                  std::optional<http::Result> first = std::nullopt) {
  std::string token;
  for (;;) {
    const Operation operation = make_operation(token);
    auto answer = first ? std::move(*first) : client.send(operation);
    first.reset();
    auto page = parse(expect_success(std::move(answer), operation.name));
    if (!page)
      throw TforkError(ErrorKind::other, "InvalidResponse", operation.name + ": " + page.error());
    if (!on_page(*page) || page->continuation_token.empty()) return;
    if (page->continuation_token == token) {
      throw TforkError(ErrorKind::other, "InvalidResponse",
                       operation.name + ": the server repeated continuation token '" + token + "'");
    }
    token = page->continuation_token;
  }
}

}  // namespace tfork::tigris
