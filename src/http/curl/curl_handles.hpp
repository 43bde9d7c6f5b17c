// SPDX-License-Identifier: Apache-2.0
#pragma once
// Move-only owners of libcurl handles, and the one process-wide curl_global_init.
// Internal to src/http/: the only code that includes <curl/curl.h>.

#include <curl/curl.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace tfork::http::curl {

// curl_global_init is not thread-safe and must run once, before any other libcurl call; a
// function-local static gives both (C++ guarantees one thread-safe initialisation).
inline void ensure_global_init() {
  struct Global {
    Global() {
      if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        throw std::runtime_error("libcurl initialisation failed");
      }
    }
    ~Global() { curl_global_cleanup(); }
    Global(const Global&) = delete;
    Global& operator=(const Global&) = delete;
  };
  static const Global global;
}

struct EasyDeleter {
  void operator()(CURL* easy) const noexcept { curl_easy_cleanup(easy); }
};
struct MultiDeleter {
  void operator()(CURLM* multi) const noexcept { curl_multi_cleanup(multi); }
};
struct ShareDeleter {
  void operator()(CURLSH* share) const noexcept { curl_share_cleanup(share); }
};
struct SlistDeleter {
  void operator()(curl_slist* list) const noexcept { curl_slist_free_all(list); }
};

using Easy = std::unique_ptr<CURL, EasyDeleter>;
using Multi = std::unique_ptr<CURLM, MultiDeleter>;
using Share = std::unique_ptr<CURLSH, ShareDeleter>;

// A header list that owns its nodes; append() keeps the list valid if curl runs out of memory.
class Slist {
 public:
  void append(const std::string& line) {
    curl_slist* grown = curl_slist_append(list_.get(), line.c_str());
    if (grown == nullptr) throw std::bad_alloc();
    (void)list_.release();  // `grown` is the same list with one more node
    list_.reset(grown);
  }
  curl_slist* get() const noexcept { return list_.get(); }

 private:
  std::unique_ptr<curl_slist, SlistDeleter> list_;
};

}  // namespace tfork::http::curl
