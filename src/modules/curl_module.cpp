// SPDX-License-Identifier: Apache-2.0
// The tfork-curl.so module: the libcurl transport behind one C entry point
// (tfork/modules/modules.hpp).
#include "tfork/modules/modules.hpp"
#include "tfork/version.hpp"

namespace {

tfork::http::Transport* make_transport(const tfork::http::Options& options) {
  return tfork::http::make_curl_transport(options).release();
}

constexpr tfork::modules::CurlModule k_module{sizeof(tfork::modules::CurlModule), tfork::k_version,
                                              __VERSION__, make_transport};

}  // namespace

extern "C" [[gnu::visibility("default")]] const tfork::modules::CurlModule* tfork_curl_module() {
  return &k_module;
}
