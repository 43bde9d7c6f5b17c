# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Helpers for end-to-end tests of `tfork serve` driven by curl (and reusable by any test
# that needs a running server).
#
#     source "$(dirname "$0")/lib.sh"
#     start_server                 # or: start_server --latency 50
#     s3 PUT /my-bucket            # a SigV4-signed curl request
#     check_status 200
#
# What it gives a test:
#   WORK            a private temporary directory, removed on exit (KEEP_WORK=1 keeps it)
#   DATA_DIR        the server's data directory ($WORK/data unless set before start_server)
#   start_server    runs `$TFORK serve --data $DATA_DIR --listen 127.0.0.1:0 ARGS...`, waits
#                   for the printed export lines and evaluates them; sets SERVER_PID,
#                   ENDPOINT, ROOT_AK, ROOT_SK and exports the AWS_* variables
#   stop_server     SIGTERM; expects exit 0 within 10 s (cli.md §8)
#   kill_server     SIGKILL (crash tests); start_server again reuses DATA_DIR
#   s3 [--as AK:SK] METHOD PATH [--body-file F | --body S] [-H 'Name: value']... [--query-only]
#                   one request signed by curl --aws-sigv4 "aws:amz:auto:s3", with the
#                   x-amz-content-sha256 header curl 7.88 does not add by itself
#                   (server-design §5.1); sets S3_STATUS, S3_BODY, S3_HEADERS, S3_BODY_FILE.
#                   curl 7.88 signs the query string in the order given, so write query
#                   parameters sorted by name (a=…&b=…) or the signature will not match.
#   header_value NAME          a response header of the last s3 call (case-insensitive)
#   xml_value TAG              the first <TAG>…</TAG> of the last S3_BODY
#   json_get EXPR < JSON       a Python expression over the parsed document `d`
#   expect_rc WHAT CODE CMD... runs CMD, output in $OUT/stdout and $OUT/stderr, fails unless exit CODE
#   tf, stdout, stderr, bucket_status, key_of   shorthands of the command-line tests
#   answer_on_pty ANSWER ARGS...  tfork ARGS on a pseudo-terminal, ANSWER typed at its [y/N]
#                   question (EOF: Ctrl-D; SIGINT: the signal); sets RC
#   step, skip, fail, check_eq, check_contains, check_not_contains, check_status, check_code
#
# Exit codes: 0 pass, 1 fail, 125 skipped (reason on stderr).
set -euo pipefail

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SOURCE_DIR=${TFORK_SOURCE_DIR:-$(cd "$E2E_DIR/../.." && pwd)}
TFORK=${TFORK:-$SOURCE_DIR/build/tfork}
SERVER_PID=""
SERVER_START_TIMEOUT=${SERVER_START_TIMEOUT:-20}
CURL_TIMEOUT=${CURL_TIMEOUT:-60}
TEST_NAME=$(basename "${BASH_SOURCE[1]:-$0}")
EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855

# --- reporting -----------------------------------------------------------------------

step() { printf '== %s: %s\n' "$TEST_NAME" "$*" >&2; }

skip() {
  printf 'SKIP %s: %s\n' "$TEST_NAME" "$*" >&2
  exit 125
}

server_log_tail() {
  if [[ -n "${WORK:-}" && -s "$WORK/serve.err" ]]; then
    printf -- '--- last lines of the server log (%s/serve.err) ---\n' "$WORK" >&2
    tail -n 40 "$WORK/serve.err" >&2 || true
    printf -- '--- end of server log ---\n' >&2
  fi
}

fail() {
  printf 'FAIL %s: %s\n' "$TEST_NAME" "$*" >&2
  server_log_tail
  exit 1
}

# expect_rc WHAT CODE COMMAND [ARG...]: runs COMMAND (a program or a shell function) with its
# stdout and stderr in $OUT/stdout and $OUT/stderr (OUT defaults to $WORK/out); fails unless
# it exits CODE, quoting the start of both.
expect_rc() {
  local what=$1 expected=$2 rc=0
  shift 2
  OUT=${OUT:-$WORK/out}
  mkdir -p "$OUT"
  "$@" >"$OUT/stdout" 2>"$OUT/stderr" || rc=$?
  [[ $rc == "$expected" ]] ||
    fail "$what: exit $rc, expected $expected; stdout: $(head -c 2000 "$OUT/stdout"); stderr: $(head -c 3000 "$OUT/stderr")"
}

check_eq() { # check_eq WHAT EXPECTED ACTUAL
  [[ "$2" == "$3" ]] || fail "$1: expected [$2], got [$3]"
}

check_contains() { # check_contains WHAT HAYSTACK NEEDLE
  [[ "$2" == *"$3"* ]] || fail "$1: expected to contain [$3], got [$2]"
}

check_not_contains() { # check_not_contains WHAT HAYSTACK NEEDLE
  [[ "$2" != *"$3"* ]] || fail "$1: expected NOT to contain [$3], got [$2]"
}

# check_status EXPECTED [WHAT]: the status of the last s3 call.
check_status() {
  [[ "$S3_STATUS" == "$1" ]] ||
    fail "${2:-$S3_METHOD $S3_PATH}: expected HTTP $1, got $S3_STATUS: $(head -c 600 <<<"$S3_BODY")"
}

# check_code STATUS CODE [WHAT]: an S3 (XML) or IAM (JSON) error of the last s3 call.
check_code() {
  check_status "$1" "${3:-}"
  [[ "$S3_BODY" == *"<Code>$2</Code>"* || "$S3_BODY" == *"\"Code\":\"$2\""* ]] ||
    fail "${3:-$S3_METHOD $S3_PATH}: expected error code $2, got: $(head -c 600 <<<"$S3_BODY")"
}

require_cmd() {
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null 2>&1 || skip "required program '$c' is not installed"
  done
}

require_tfork() {
  [[ -x "$TFORK" ]] || skip "tfork binary not found at '$TFORK' (set TFORK or build it first)"
  "$TFORK" serve --help >/dev/null 2>&1 || skip "'$TFORK serve' is not available in this build"
}

# --- temporary directory and cleanup -------------------------------------------------

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tfork-e2e-${TEST_NAME%.*}.XXXXXX")
DATA_DIR=${DATA_DIR:-$WORK/data}
KEEP_WORK=${KEEP_WORK:-0}

_lib_cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_server_quietly
  # Background jobs a test left behind (only our own children).
  local job
  for job in $(jobs -p); do kill "$job" 2>/dev/null || true; done
  if [[ "$KEEP_WORK" == 1 ]]; then
    printf 'kept work directory %s\n' "$WORK" >&2
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap _lib_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Keep the developer's own credentials and proxies away from the test.
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 \
  AWS_ENDPOINT_URL_IAM AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY TFORK_ROOT_ACCESS_KEY \
  TFORK_ROOT_SECRET_KEY HTTP_PROXY HTTPS_PROXY http_proxy https_proxy ALL_PROXY all_proxy || true
export NO_PROXY='127.0.0.1,localhost' no_proxy='127.0.0.1,localhost'

# --- the server ----------------------------------------------------------------------

start_server() { # start_server [extra serve args...]
  require_tfork
  mkdir -p "$DATA_DIR"
  : >"$WORK/serve.out"
  "$TFORK" serve --data "$DATA_DIR" --listen 127.0.0.1:0 "$@" \
    >"$WORK/serve.out" 2>>"$WORK/serve.err" </dev/null &
  SERVER_PID=$!
  local deadline=$((SECONDS + SERVER_START_TIMEOUT)) rc
  until grep -q '^export AWS_REGION=' "$WORK/serve.out" 2>/dev/null; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      wait "$SERVER_PID" 2>/dev/null && rc=0 || rc=$?
      SERVER_PID=""
      fail "'tfork serve' exited (status $rc) before printing its export lines"
    fi
    ((SECONDS < deadline)) || fail "'tfork serve' printed no export lines in ${SERVER_START_TIMEOUT}s"
    sleep 0.05
  done
  # Exactly what a user would eval.
  eval "$(grep -E '^export [A-Za-z_][A-Za-z0-9_]*=' "$WORK/serve.out")"
  ENDPOINT=$AWS_ENDPOINT_URL
  ROOT_AK=$AWS_ACCESS_KEY_ID
  ROOT_SK=$AWS_SECRET_ACCESS_KEY
  [[ "$ENDPOINT" =~ ^http://127\.0\.0\.1:[0-9]+$ ]] || fail "unexpected endpoint printed: [$ENDPOINT]"
  [[ "$ENDPOINT" != "http://127.0.0.1:0" ]] || fail "serve printed port 0 instead of the bound port"
  [[ "${AWS_REGION:-}" == auto ]] || fail "serve printed AWS_REGION=[${AWS_REGION:-}]"
  step "server pid $SERVER_PID at $ENDPOINT"
}

stop_server() {
  [[ -n "$SERVER_PID" ]] || return 0
  local pid=$SERVER_PID rc=0 i
  SERVER_PID=""
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    fail "'tfork serve' did not exit within 10 s of SIGTERM"
  fi
  wait "$pid" 2>/dev/null || rc=$?
  [[ $rc == 0 ]] || fail "'tfork serve' exited with status $rc after SIGTERM (expected 0)"
}

kill_server() {
  [[ -n "$SERVER_PID" ]] || return 0
  kill -KILL "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}

stop_server_quietly() {
  [[ -n "${SERVER_PID:-}" ]] || return 0
  local pid=$SERVER_PID i
  SERVER_PID=""
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

server_alive() { [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; }

# --- signed requests -----------------------------------------------------------------

s3() {
  local as="$ROOT_AK:$ROOT_SK"
  if [[ "$1" == --as ]]; then
    as=$2
    shift 2
  fi
  S3_METHOD=$1
  S3_PATH=$2
  shift 2
  local body_file="" hash=$EMPTY_SHA256
  local -a extra=()
  while (($#)); do
    case "$1" in
      --body-file) body_file=$2; shift 2 ;;
      --body)
        body_file="$WORK/.s3-body"
        printf '%s' "$2" >"$body_file"
        shift 2
        ;;
      -H) extra+=(-H "$2"); shift 2 ;;
      *) extra+=("$1"); shift ;;
    esac
  done
  local -a method_args=(-X "$S3_METHOD")
  [[ "$S3_METHOD" == HEAD ]] && method_args=(--head)
  if [[ -n "$body_file" ]]; then
    hash=$(sha256sum "$body_file" | cut -d' ' -f1)
    method_args+=(--data-binary "@$body_file")
  fi
  S3_STATUS=$(curl -sS --max-time "$CURL_TIMEOUT" --aws-sigv4 "aws:amz:auto:s3" --user "$as" \
    -H "x-amz-content-sha256: $hash" "${method_args[@]}" "${extra[@]}" \
    -D "$WORK/.s3-headers" -o "$WORK/.s3-response" -w '%{http_code}' "$ENDPOINT$S3_PATH") ||
    S3_STATUS=000
  S3_HEADERS=$(tr -d '\r' <"$WORK/.s3-headers" 2>/dev/null || true)
  S3_BODY=$(tr -d '\0' <"$WORK/.s3-response" 2>/dev/null || true)
  S3_BODY_FILE="$WORK/.s3-response"
}

header_value() { # header_value NAME: from the last s3 call (last occurrence wins)
  awk -v name="$(tr '[:upper:]' '[:lower:]' <<<"$1")" -F': ' '
    { key = tolower($1) } key == name { sub(/^[^:]*: /, ""); value = $0 } END { print value }' \
    <<<"$S3_HEADERS"
}

xml_value() { # xml_value TAG [XML]: the text of the first <TAG>…</TAG>
  local xml=${2-$S3_BODY}
  /usr/bin/python3 -c '
import re, sys, html
m = re.search("<%s>(.*?)</%s>" % (sys.argv[1], sys.argv[1]), sys.stdin.read(), re.S)
print(html.unescape(m.group(1)) if m else "")' "$1" <<<"$xml"
}

json_get() {
  /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
r = eval(sys.argv[1], {"d": d, "len": len, "sorted": sorted, "any": any, "all": all})
print(r if isinstance(r, str) else json.dumps(r))
' "$1"
}

# iam ACTION_QUERY FORM_BODY [--as AK:SK]: a Tigris IAM call (tigris-wire §3.2).
iam() {
  local query=$1 form=$2
  shift 2
  local -a as=()
  [[ "${1:-}" == --as ]] && as=(--as "$2")
  s3 "${as[@]}" POST "/?$query" --body "$form" \
    -H 'Content-Type: application/x-www-form-urlencoded' -H 'Accept: application/json'
}

# urlencode TEXT: form encoding of one value.
urlencode() { /usr/bin/python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }

# answer_on_pty ANSWER ARGS...: tfork ARGS with stdin and stderr on a pseudo-terminal; once the
# question "[y/N]" appears (deadline 60 s, never a fixed wait) types ANSWER (Ctrl-D when it is
# EOF; SIGINT sends tfork that signal, as Ctrl-C on its terminal would). Sets RC; the
# terminal's text is in $WORK/pty.err.
answer_on_pty() {
  local answer=$1
  shift
  RC=0
  python3 - "$WORK/pty.err" "$answer" "$TFORK" "$@" <<'PY' || RC=$?
import os, pty, select, signal, subprocess, sys, time
err_path, answer, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
master, slave = pty.openpty()
child = subprocess.Popen(argv, stdin=slave, stdout=subprocess.DEVNULL, stderr=slave)
os.close(slave)
data, sent, deadline = b"", False, time.monotonic() + 60
while time.monotonic() < deadline:
    ready, _, _ = select.select([master], [], [], 1)
    if ready:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        data += chunk
    if not sent and b"[y/N]" in data:
        if answer == "SIGINT":
            child.send_signal(signal.SIGINT)
        else:
            os.write(master, b"\x04" if answer == "EOF" else answer.encode() + b"\n")
        sent = True
    if child.poll() is not None and not ready:
        break
os.close(master)
open(err_path, "wb").write(data)
try:
    code = child.wait(timeout=60)
except subprocess.TimeoutExpired:
    child.kill()
    code = 124
sys.exit(code if sent else 125)
PY
  [[ $RC != 125 ]] || fail "$*: the question never appeared: $(cat "$WORK/pty.err")"
}

# The command-line tests' shorthands (a test may define its own instead, after sourcing):
# tf ARGS runs the binary under test; stdout and stderr print what the last expect_rc caught;
# bucket_status NAME is HeadBucket's status (200, 404); key_of MANIFEST BUCKET is the key the
# manifest records for that fork, as AK:SK.
tf() { "$TFORK" "$@"; }
stdout() { cat "$OUT/stdout"; }
stderr() { cat "$OUT/stderr"; }
bucket_status() {
  s3 HEAD "/$1"
  printf '%s' "$S3_STATUS"
}
key_of() { json_get "[f['access_key_id'] + ':' + f['secret_access_key'] for f in d['forks'] if f['bucket'] == '$2'][0]" <"$1"; }
# put BUCKET KEY TEXT stores TEXT as the root key (200 or the test fails); body BUCKET KEY
# [VERSION] is the object's text (at that snapshot version), or <STATUS> when it is not 200.
put() {
  s3 PUT "/$1/$2" --body "$3"
  check_status 200
}
body() {
  local -a at=()
  [[ -n "${3:-}" ]] && at=(-H "X-Tigris-Snapshot-Version: $3")
  s3 GET "/$1/$2" "${at[@]}"
  if [[ "$S3_STATUS" == 200 ]]; then printf '%s' "$S3_BODY"; else printf '<%s>' "$S3_STATUS"; fi
}

random_file() { # random_file PATH BYTES
  head -c "$2" /dev/urandom >"$1"
}

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }
