#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The loadable modules (tfork/core/module.hpp): a command that needs a module which is missing,
# unloadable or from another build fails with one clear line (and the JSON error with --json)
# and exit 1; a command that needs no module (version) still works, and loads no libcrypto.
source "$(dirname "$0")/lib.sh"
require_tfork

MODULE_DIR=$(dirname "$TFORK")
[[ -f "$MODULE_DIR/tfork-curl.so" && -f "$MODULE_DIR/tfork-crypto.so" &&
  -f "$MODULE_DIR/tfork-serve.so" ]] ||
  skip "the modules are not next to $TFORK"
# A copy of the binary finds its modules next to itself, in ../lib/tfork, or in the install
# directory; when tfork is installed there, the missing-module case cannot be staged.
install_dir=$(grep -aoE '/[[:alnum:]/._-]*/lib[[:alnum:]_-]*/tfork' "$TFORK" | head -n 1 || true)
[[ -n "$install_dir" && -e "$install_dir/tfork-curl.so" ]] &&
  skip "tfork is installed in $install_dir: a missing module cannot be staged"

alone="$WORK/alone/bin"
mkdir -p "$alone"
cp "$TFORK" "$alone/tfork"

run() { # run EXPECTED-RC ARGS...: the copy, stdout/stderr to $WORK/out, $WORK/err
  local expected=$1 rc=0
  shift
  timeout 60 "$alone/tfork" "$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
  [[ $rc == "$expected" ]] || fail "tfork $*: exit $rc, expected $expected; stderr: $(cat "$WORK/err")"
}

common=(--endpoint-url http://127.0.0.1:9 --max-attempts 1 --connect-timeout 1)
export AWS_ACCESS_KEY_ID=AKIDMODULES AWS_SECRET_ACCESS_KEY=secret-modules

step "no module is needed by version"
run 0 version

step "a missing module: exit 1, ModuleNotFound, one line"
run 1 "${common[@]}" fork head some-bucket
check_contains "missing module" "$(cat "$WORK/err")" "tfork-curl.so is missing"
run 1 "${common[@]}" --json fork head some-bucket
python3 -c 'import json,sys; e=json.loads(open(sys.argv[1]).read().splitlines()[-1])["error"]; assert e["code"]=="ModuleNotFound" and e["exit_code"]==1, e' \
  "$WORK/err" || fail "missing module JSON: $(cat "$WORK/err")"
run 1 serve --listen 127.0.0.1:0 --data "$WORK/data"
check_contains "missing serve module" "$(cat "$WORK/err")" "tfork-serve.so is missing"

step "a file that is not a module: exit 1, ModuleLoadFailed"
echo "not an ELF file" >"$alone/tfork-curl.so"
run 1 "${common[@]}" fork head some-bucket
check_contains "unloadable module" "$(cat "$WORK/err")" "cannot load"

step "a module without the entry point (another build): exit 1, ModuleLoadFailed"
cp "$MODULE_DIR/tfork-serve.so" "$alone/tfork-curl.so"
run 1 "${common[@]}" --json fork head some-bucket
python3 -c 'import json,sys; e=json.loads(open(sys.argv[1]).read().splitlines()[-1])["error"]; assert e["code"]=="ModuleLoadFailed", e' \
  "$WORK/err" || fail "wrong module JSON: $(cat "$WORK/err")"

step "version, help and completion load no libcrypto (only commands that sign or hash do)"
for args in version --help "completion bash"; do
  # shellcheck disable=SC2086 # each entry is a command line
  LD_DEBUG=libs "$TFORK" $args >/dev/null 2>"$WORK/libs" || fail "tfork $args failed"
  grep -q "calling init: .*libstdc++" "$WORK/libs" || fail "LD_DEBUG=libs shows no library init"
  if grep -E "calling init: .*lib(crypto|ssl|curl)" "$WORK/libs"; then
    fail "tfork $args loads OpenSSL or libcurl"
  fi
done

step "a command that signs needs tfork-crypto.so: missing, then from another build"
cp "$MODULE_DIR/tfork-curl.so" "$alone/tfork-curl.so"
run 1 "${common[@]}" fork head some-bucket
check_contains "missing crypto module" "$(cat "$WORK/err")" "tfork-crypto.so is missing"
check_eq "one line" 1 "$(wc -l <"$WORK/err")"
cp "$MODULE_DIR/tfork-curl.so" "$alone/tfork-crypto.so"
run 1 "${common[@]}" --json fork head some-bucket
python3 -c 'import json,sys; e=json.loads(open(sys.argv[1]).read().splitlines()[-1])["error"]; assert e["code"]=="ModuleLoadFailed" and "tfork_crypto_module" in e["message"], e' \
  "$WORK/err" || fail "wrong crypto module JSON: $(cat "$WORK/err")"

step "--dry-run signs with tfork-crypto.so alone, without libcurl"
rm "$alone/tfork-curl.so"
cp "$MODULE_DIR/tfork-crypto.so" "$alone/tfork-crypto.so"
run 0 "${common[@]}" --dry-run bucket create some-bucket
check_contains "dry run" "$(cat "$WORK/out" "$WORK/err")" "some-bucket"

step "pass"
