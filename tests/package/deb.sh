#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package: `cpack` builds tfork_<version>_<arch>.deb from the release build, apt-get
# installs it (its dependencies come from the package's own Depends line), and the installed
# files work on their own: the binary and its modules, the man page, the completions in
# Debian's paths, and a `tfork serve` + `fork create` round trip. The package is purged at
# the end. Installs system-wide, so scripts/test runs it only under CI or with TFORK_TEST_DEB=1.
# Usage: tests/package/deb.sh [BUILD_DIR]   (default build/)
source "$(cd "$(dirname "$0")" && pwd)/../e2e/lib.sh"
build_dir=$(cd "${1:-$SOURCE_DIR/build}" && pwd)
[[ $(id -u) -eq 0 ]] || skip "installing a .deb needs root"
command -v dpkg-deb >/dev/null || skip "not a Debian system (no dpkg-deb)"

step "cpack builds the package"
rm -f "$build_dir"/tfork_*.deb
(cd "$build_dir" && cpack -G DEB >"$WORK/cpack.log" 2>&1) || { cat "$WORK/cpack.log" >&2; fail "cpack failed"; }
deb=$(ls "$build_dir"/tfork_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
check_contains "declared dependencies" "$depends" "libcurl4"
check_contains "declared dependencies" "$depends" "libsqlite3"
check_contains "declared dependencies (tfork-crypto.so)" "$depends" "libssl3"
contents=$(dpkg-deb -c "$deb")
for file in ./usr/bin/tfork ./usr/lib/tfork/tfork-curl.so ./usr/lib/tfork/tfork-crypto.so \
            ./usr/lib/tfork/tfork-serve.so ./usr/lib/tfork/tfork-mcp-http.so \
            ./usr/share/tfork/SKILL.md ./usr/share/man/man1/tfork.1 \
            ./usr/share/bash-completion/completions/tfork \
            ./usr/share/zsh/vendor-completions/_tfork ./usr/share/fish/vendor_completions.d/tfork.fish; do
  check_contains "package contents" "$contents" "$file"
done

step "apt-get installs it"
purge() {
  local rc=$?
  set +e
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq tfork >/dev/null 2>&1
  (exit "$rc")
  _lib_cleanup # reads the test's exit status from $?
}
trap purge EXIT
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >"$WORK/apt.log" 2>&1 ||
  { cat "$WORK/apt.log" >&2; fail "apt-get install $deb failed"; }
installed=/usr/bin/tfork
check_contains "tfork version" "$("$installed" version)" "tfork"
man_path=$(man -w tfork 2>/dev/null) || fail "man -w tfork finds no page"
check_eq "man page" /usr/share/man/man1/tfork.1 "$man_path"

step "the installed binary serves and forks through its own modules"
TFORK=$installed start_server
"$installed" bucket create deb-check --snapshots >/dev/null
created=$("$installed" fork create deb-check -n 2 --prefix deb-run --keys none --json --manifest "$WORK/m.json")
check_contains "fork create from the installed files" "$created" '"status": "created"'
"$installed" teardown --manifest "$WORK/m.json" >/dev/null
stop_server
echo "deb: ok"
