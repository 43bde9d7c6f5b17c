// SPDX-License-Identifier: Apache-2.0
#include "tfork/rules/redaction.hpp"

#include "tfork/core/ascii.hpp"

namespace tfork::rules {

bool names_a_secret(std::string_view name) {
  return ascii::icontains(name, "secret") || ascii::icontains(name, "token") ||
         ascii::icontains(name, "signature");
}

std::string redact_target(std::string_view target) {
  const auto question = target.find('?');
  if (question == std::string_view::npos) return std::string(target);
  std::string out(target.substr(0, question + 1));
  std::string_view query = target.substr(question + 1);
  for (bool first = true;; first = false) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (!first) out += '&';
    const auto eq = pair.find('=');
    if (eq != std::string_view::npos && names_a_secret(pair.substr(0, eq))) {
      out += pair.substr(0, eq + 1);
      out += "***";
    } else {
      out += pair;
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

}  // namespace tfork::rules
