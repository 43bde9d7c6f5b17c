// SPDX-License-Identifier: Apache-2.0
#pragma once
// tfork doctor (cli.md §14, issue 23 §4): what the configuration amounts to (credentials and
// where they came from, endpoint, TLS, clock, whether the key is accepted) and, with --probe,
// the open questions of tigris-wire §10 asked of the service on a throwaway bucket and key,
// reported as checks and as the `serve --quirks` names of what the gateway was seen to do.

#include "tfork/cli/command.hpp"

#include <string>
#include <string_view>

namespace tfork::commands {

void register_doctor(CLI::App& root, cli::Context& context);

// "tid_…WXYZ": enough of an access key id to tell keys apart, never the whole of it.
std::string masked_key_id(std::string_view access_key_id);

}  // namespace tfork::commands
