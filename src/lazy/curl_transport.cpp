// In the tfork executable, the curl transport comes from the tfork-curl.so module, loaded on
// first use (tfork/core/module.hpp).
#include "tfork/core/module.hpp"
#include "tfork/http/transport.hpp"

namespace tfork::http {

std::unique_ptr<Transport> make_curl_transport(const Options& options) {
  using Factory = Transport* (*)(const Options&);
  static const auto factory =
      reinterpret_cast<Factory>(module_symbol("tfork-curl.so", "tfork_curl_transport_new"));
  return std::unique_ptr<Transport>(factory(options));
}

}  // namespace tfork::http
