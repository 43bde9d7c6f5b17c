// The tfork-curl.so module: the libcurl transport behind one C entry point (see
// tfork/core/module.hpp for why it is a module).
#include "tfork/http/transport.hpp"

extern "C" [[gnu::visibility("default")]] tfork::http::Transport* tfork_curl_transport_new(
    const tfork::http::Options& options) {
  return tfork::http::make_curl_transport(options).release();
}
