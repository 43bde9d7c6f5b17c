// SPDX-License-Identifier: Apache-2.0
#include "tfork/server/principal.hpp"

namespace tfork::server {

bool is_admin(const Principal& principal) {
  if (principal.root) return true;
  for (const auto& role : principal.roles) {
    if (role.bucket == "*" && role.role == store::Role::namespace_admin) return true;
  }
  return false;
}

bool has_any_role(const Principal& principal, std::string_view bucket) {
  if (is_admin(principal)) return true;
  for (const auto& role : principal.roles) {
    if (role.bucket == bucket) return true;
  }
  return false;
}

bool allowed(const Principal& principal, std::string_view bucket, Access access) {
  if (is_admin(principal)) return true;
  for (const auto& role : principal.roles) {
    if (role.bucket != bucket) continue;
    switch (role.role) {
      case store::Role::namespace_admin:  // only meaningful on "*"; on one bucket: full rights
      case store::Role::editor:
        return true;
      case store::Role::read_only:
        if (access == Access::read || access == Access::snapshot) return true;
        break;
    }
  }
  return false;
}

}  // namespace tfork::server
