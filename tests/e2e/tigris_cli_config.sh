#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 11, README "Pointing tfork at Tigris"): credentials the Tigris CLI saved in
# ~/.tigris/config.json are read last, after the environment and the AWS profiles. The real
# binary runs with nothing but HOME (a temporary one holding such a file) against a real
# `tfork serve`: it works from the file alone (keys and endpoint), the temporary credentials
# of a login win over the saved ones, and the environment and an AWS profile win over the file.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_tfork
start_server

HOME_DIR="$WORK/home"
mkdir -p "$HOME_DIR/.tigris"
BOGUS_AK=tid_NotAKeyOfThisServer0
BOGUS_SK=tsec_not-the-secret-of-any-key-here-000000

# tigris_config SAVED_AK SAVED_SK [TEMP_AK TEMP_SK]: the file in the layout the Tigris CLI
# (version 2 of its config) writes, with the server as the endpoint.
tigris_config() {
  local temporary=""
  if [[ $# -ge 4 ]]; then
    temporary=$(printf ', "temporary": {"accessKeyId": "%s", "secretAccessKey": "%s", "endpoint": "%s"}' \
      "$3" "$4" "$ENDPOINT")
  fi
  printf '{"version": 2, "activeMethod": "credentials", "credentials": {"saved": {"accessKeyId": "%s", "secretAccessKey": "%s", "endpoint": "%s"}%s}}\n' \
    "$1" "$2" "$ENDPOINT" "$temporary" >"$HOME_DIR/.tigris/config.json"
  chmod 600 "$HOME_DIR/.tigris/config.json"
}

# bare [VAR=value...] -- ARGS...: tfork with an empty environment but HOME (and PATH), so
# that no AWS_* or TIGRIS_* variable of the test or of the developer leaks in.
bare() {
  local vars=()
  while [[ $1 != -- ]]; do
    vars+=("$1")
    shift
  done
  shift
  # The sanitizer build's settings (tests/sanitizer/run.sh) are not the developer's: keep them.
  local san
  for san in ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS; do
    [[ -z "${!san:-}" ]] || vars+=("$san=${!san}")
  done
  env -i PATH="$PATH" HOME="$HOME_DIR" "${vars[@]}" timeout 60 "$TFORK" --no-progress "$@"
}


step "with no credentials anywhere, the error names the Tigris CLI's file too (exit 2)"
expect_rc "no credentials" 2 bare -- bucket create tc-nothing
check_contains "no-credentials message" "$(cat "$OUT/stderr")" "$HOME_DIR/.tigris/config.json"

step "the saved credentials alone (keys and endpoint from the file) work"
tigris_config "$ROOT_AK" "$ROOT_SK"
expect_rc "bucket create from the file" 0 bare -- bucket create tc-from-file --json
check_contains "created" "$(cat "$OUT/stdout")" '"created": true'
expect_rc "fork head from the file" 0 bare -- fork head tc-from-file --json
check_not_contains "no secret on stdout" "$(cat "$OUT/stdout")" "$ROOT_SK"
check_not_contains "no secret on stderr" "$(cat "$OUT/stderr")" "$ROOT_SK"

step "-v shows no secret either"
expect_rc "verbose" 0 bare -- -v fork head tc-from-file
check_not_contains "no secret with -v" "$(cat "$OUT/stderr")" "$ROOT_SK"

step "a saved key the server does not know is used (and refused: exit 2)"
tigris_config "$BOGUS_AK" "$BOGUS_SK"
expect_rc "bogus saved key" 2 bare -- fork head tc-from-file

step "the temporary credentials of a login win over the saved ones"
tigris_config "$BOGUS_AK" "$BOGUS_SK" "$ROOT_AK" "$ROOT_SK"
expect_rc "temporary good, saved bogus" 0 bare -- fork head tc-from-file
tigris_config "$ROOT_AK" "$ROOT_SK" "$BOGUS_AK" "$BOGUS_SK"
expect_rc "temporary bogus, saved good" 2 bare -- fork head tc-from-file

step "the environment wins over the file"
tigris_config "$BOGUS_AK" "$BOGUS_SK"
expect_rc "AWS_* over the file" 0 bare AWS_ACCESS_KEY_ID="$ROOT_AK" AWS_SECRET_ACCESS_KEY="$ROOT_SK" \
  -- fork head tc-from-file
expect_rc "TIGRIS_STORAGE_* over the file" 0 bare TIGRIS_STORAGE_ACCESS_KEY_ID="$ROOT_AK" \
  TIGRIS_STORAGE_SECRET_ACCESS_KEY="$ROOT_SK" -- fork head tc-from-file
tigris_config "$ROOT_AK" "$ROOT_SK"
expect_rc "a wrong environment key is not rescued by a good file" 2 bare \
  AWS_ACCESS_KEY_ID="$BOGUS_AK" AWS_SECRET_ACCESS_KEY="$BOGUS_SK" -- fork head tc-from-file

step "an AWS profile wins over the file too"
mkdir -p "$HOME_DIR/.aws"
printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$BOGUS_AK" "$BOGUS_SK" \
  >"$HOME_DIR/.aws/credentials"
expect_rc "bogus default profile over a good file" 2 bare -- fork head tc-from-file
printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$ROOT_AK" "$ROOT_SK" \
  >"$HOME_DIR/.aws/credentials"
tigris_config "$BOGUS_AK" "$BOGUS_SK"
expect_rc "good default profile over a bogus file" 0 bare -- fork head tc-from-file
rm -f "$HOME_DIR/.aws/credentials"

step "an endpoint named anywhere else wins over the file's"
tigris_config "$ROOT_AK" "$ROOT_SK"
expect_rc "nothing listening at the environment's endpoint (exit 5)" 5 bare \
  AWS_ENDPOINT_URL=http://127.0.0.1:9 AWS_MAX_ATTEMPTS=1 -- fork head tc-from-file

step "a malformed file is no file"
printf '{"version": 2, "credentials": ' >"$HOME_DIR/.tigris/config.json"
expect_rc "truncated file" 2 bare -- fork head tc-from-file
