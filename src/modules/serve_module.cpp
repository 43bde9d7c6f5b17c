// The tfork-serve.so module: the local store (SQLite, libmicrohttpd) behind one C entry point
// (see tfork/core/module.hpp for why it is a module).
#include "tfork/server/serve.hpp"

extern "C" [[gnu::visibility("default")]] int tfork_serve_run(
    const tfork::server::ServeOptions& options,
    const std::function<void(int, const std::string&, const std::string&)>& on_ready) {
  return tfork::server::run_server(options, on_ready);
}
