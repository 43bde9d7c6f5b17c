#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh COMMAND [ARG...]: runs one end-to-end test against the sanitizer build (TFORK_SANITIZE)
# and fails it when any tfork process of the test met a sanitizer error, whichever process it
# was: the command under test, a `tfork serve` in the background whose output nobody reads, or
# a tfork whose non-zero exit the test expects.
#
# - AddressSanitizer and LeakSanitizer reports go to files in a private folder (log_path).
# - UndefinedBehaviorSanitizer cannot: g++ links its own runtime (libubsan), which ignores
#   log_path next to libasan and always prints to stderr. So every UBSan error ends the process
#   with exit status 86 (no tfork exit status, cli.md §6), and its report is found where the
#   test kept that stderr: the test runs with a TMPDIR of its own and KEEP_WORK=1 (lib.sh and
#   tfork_server.py then keep their work folders: serve.err, captured stdout and stderr), and
#   its own output is copied to a file. After the test, all of it is searched for reports.
# Any report is printed and fails the test (exit 1), even if the test passed or skipped.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
private=$(mktemp -d "${TMPDIR:-/tmp}/tfork-sanitizer.XXXXXX")
trap 'rm -rf "$private"' EXIT
mkdir "$private/reports" "$private/tmp"

# ASan: the first error is fatal. LSan (part of ASan): leaks at exit are errors, except the
# third-party ones listed in lsan.supp. UBSan: every check is fatal (-fno-sanitize-recover),
# with a stack trace. intercept_tls_get_addr=0: the runtime of g++ 12 takes a dynamic TLS block
# that starts 16 bytes into a page for glibc 2.19's layout, reads a bogus range and its leak checker
# dies ("Tracer caught signal 11", google/sanitizers#1322; `tfork snapshot ls` met it). Leaks are
# still checked; only the dynamic TLS blocks of dlopen'ed libraries are no longer scanned.
export ASAN_OPTIONS="log_path=$private/reports/asan:exitcode=86:halt_on_error=1:detect_leaks=1:intercept_tls_get_addr=0:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1"
export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="exitcode=86:halt_on_error=1:print_stacktrace=1"
# Shared locks (clients_lib.sh's npm ci) stay where every test sees them.
export TFORK_LOCK_DIR="${TMPDIR:-/tmp}"
export TMPDIR="$private/tmp" KEEP_WORK=1

"$@" 2>&1 | tee "$private/test-output"
rc=${PIPESTATUS[0]}

found=0
for report in "$private/reports"/*; do
  [[ -s "$report" ]] || continue
  found=1
  printf -- '--- sanitizer report %s ---\n' "$(basename "$report")"
  head -c 20000 "$report"
done
# UBSan's reports (and any ASan report written to stderr after all) in what the test kept.
while IFS= read -r file; do
  found=1
  printf -- '--- sanitizer report in %s ---\n' "${file#"$private/"}"
  grep -E -A 30 ': runtime error: |ERROR: (Address|Leak|UndefinedBehavior)Sanitizer' "$file" |
    head -c 20000
done < <(grep -rIlE ': runtime error: |ERROR: (Address|Leak|UndefinedBehavior)Sanitizer' \
  "$private/tmp" "$private/test-output" 2>/dev/null | grep -v '/reports/')
if ((found)); then
  printf 'FAIL: a sanitizer reported an error (test exit status %d)\n' "$rc"
  exit 1
fi
exit "$rc"
