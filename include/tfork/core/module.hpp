// SPDX-License-Identifier: Apache-2.0
#pragma once
// Loading tfork's own optional modules. libcurl (with its GnuTLS, Kerberos and LDAP tree),
// OpenSSL's libcrypto and the local store's SQLite + libmicrohttpd cost several milliseconds and
// megabytes to load, so they live in modules (tfork-curl.so, tfork-crypto.so, tfork-serve.so)
// that a command loads only when it needs them: `tfork version` loads none, `fork create` curl
// and crypto, `--dry-run` only crypto, `serve` only the store (cli.md §9 start-up and memory
// goals). What a module exports, and the same-build contract,
// are in tfork/modules/modules.hpp.

#include <filesystem>
#include <string_view>
#include <vector>

namespace tfork {

// The address of `symbol` in the module file `name` (e.g. "tfork-curl.so"), looked for next
// to the running executable, then in ../lib/tfork beside it, then in the install directory.
// Throws TforkError when the module or the symbol cannot be loaded.
void* module_symbol(std::string_view name, const char* symbol);

// The module files (tfork-*.so) that a tfork at `executable` would load, in the directories
// module_symbol() looks in for it: what an agent's sandbox must show beside a tfork binary it
// is given for that tfork to work inside it (cli.md §12).
std::vector<std::filesystem::path> module_files(const std::filesystem::path& executable);

}  // namespace tfork
