// In the tfork executable, the local store comes from the tfork-serve.so module, loaded when
// `tfork serve` runs (tfork/core/module.hpp).
#include "tfork/server/serve.hpp"

#include "tfork/core/module.hpp"

namespace tfork::server {

int run_server(const ServeOptions& options,
               const std::function<void(int port, const std::string& access_key,
                                        const std::string& secret_key)>& on_ready) {
  using Run = int (*)(const ServeOptions&,
                      const std::function<void(int, const std::string&, const std::string&)>&);
  const auto run = reinterpret_cast<Run>(module_symbol("tfork-serve.so", "tfork_serve_run"));
  return run(options, on_ready);
}

}  // namespace tfork::server
