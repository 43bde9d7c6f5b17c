#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `cmake --install` lays out a working tfork: the binary finds its modules (tfork-curl.so,
# tfork-crypto.so, tfork-serve.so) under <prefix>/lib/tfork, and the man page and completions
# are in place.
source "$(dirname "$0")/lib.sh"
require_tfork
build_dir=$(dirname "$TFORK")
[[ -f "$build_dir/cmake_install.cmake" ]] || skip "no CMake build tree beside $TFORK"

step "install into a temporary prefix"
prefix=$WORK/prefix
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
for file in bin/tfork lib/tfork/tfork-curl.so lib/tfork/tfork-crypto.so lib/tfork/tfork-serve.so \
            lib/tfork/tfork-mcp-http.so share/tfork/SKILL.md share/man/man1/tfork.1 share/bash-completion/completions/tfork \
            share/zsh/vendor-completions/_tfork share/fish/vendor_completions.d/tfork.fish; do
  [[ -f "$prefix/$file" ]] || fail "cmake --install did not install $file"
done

step "the installed binary serves and talks to its server through its modules"
TFORK=$prefix/bin/tfork start_server
"$prefix/bin/tfork" bucket create installed-check --snapshots >/dev/null
heads=$("$prefix/bin/tfork" fork head installed-check --json)
check_contains "fork head through the installed tfork-curl.so" "$heads" '"snapshots_enabled": true'
stop_server
echo "install: ok"
