# shellcheck shell=bash
# Helpers for the end-to-end tests that drive real third-party clients (AWS CLI, curl,
# the npm AWS and Tigris SDKs) and the tfork CLI against a real `tfork serve`.
#
# Source it from a test script:
#     source "$(dirname "$0")/clients_lib.sh"
#     start_server
#
# What it gives a test:
#   WORK             a private temporary directory, removed on exit (even on failure)
#   start_server     starts `$TFORK serve --data $WORK/data --listen 127.0.0.1:0`, waits for
#                    the printed `export` lines and evaluates them (AWS_ENDPOINT_URL,
#                    AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION); sets ENDPOINT,
#                    ROOT_AK, ROOT_SK
#   stop_server      SIGTERM, then waits (bounded) for a clean exit 0
#   aws_cli ...      /usr/bin/aws pointed at the server (isolated config, no pager)
#   ensure_node      makes sure tests/node/node_modules is installed (npm ci, once)
#   run_node F.mjs   runs tests/node/F.mjs with the server's environment
#   assertions       check_eq, check_contains, check_not_contains, fail, skip, step
#
# Exit codes: 0 pass, 1 fail, 125 skipped (with the reason on stderr).
set -euo pipefail

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SOURCE_DIR=${TFORK_SOURCE_DIR:-$(cd "$E2E_DIR/../.." && pwd)}
NODE_DIR="$SOURCE_DIR/tests/node"
TFORK=${TFORK:-$SOURCE_DIR/build/tfork}
AWS_BIN=${AWS_BIN:-/usr/bin/aws}
SERVER_PID=""
SERVER_START_TIMEOUT=${SERVER_START_TIMEOUT:-20}
CLIENT_TIMEOUT=${CLIENT_TIMEOUT:-180}
TEST_NAME=$(basename "${BASH_SOURCE[1]:-$0}")

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

check_eq() { # check_eq WHAT EXPECTED ACTUAL
  [[ "$2" == "$3" ]] || fail "$1: expected [$2], got [$3]"
}

check_contains() { # check_contains WHAT HAYSTACK NEEDLE
  [[ "$2" == *"$3"* ]] || fail "$1: expected to contain [$3], got [$2]"
}

check_not_contains() { # check_not_contains WHAT HAYSTACK NEEDLE
  [[ "$2" != *"$3"* ]] || fail "$1: expected NOT to contain [$3], got [$2]"
}

require_cmd() {
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null 2>&1 || skip "required program '$c' is not installed"
  done
}

require_tfork() {
  [[ -x "$TFORK" ]] || skip "tfork binary not found at '$TFORK' (set TFORK or build it first)"
}

# --- temporary directory and cleanup -------------------------------------------------

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tfork-e2e-${TEST_NAME%.*}.XXXXXX")
KEEP_WORK=${KEEP_WORK:-0}

_cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_server_quietly
  if [[ "$KEEP_WORK" == 1 ]]; then
    printf 'kept work directory %s\n' "$WORK" >&2
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap _cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Isolate every client from the developer's own AWS/Tigris configuration.
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN AWS_SECURITY_TOKEN \
  AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_ENDPOINT_URL_IAM AWS_ACCESS_KEY_ID \
  AWS_SECRET_ACCESS_KEY AWS_CA_BUNDLE AWS_ROLE_ARN AWS_WEB_IDENTITY_TOKEN_FILE \
  TIGRIS_STORAGE_ACCESS_KEY_ID TIGRIS_STORAGE_SECRET_ACCESS_KEY TIGRIS_STORAGE_ENDPOINT \
  TIGRIS_IAM_ENDPOINT TIGRIS_STORAGE_BUCKET TIGRIS_SESSION_TOKEN TIGRIS_ORGANIZATION_ID \
  TFORK_ROOT_ACCESS_KEY TFORK_ROOT_SECRET_KEY TFORK_OUTPUT HTTP_PROXY HTTPS_PROXY \
  http_proxy https_proxy ALL_PROXY all_proxy || true
export NO_PROXY='127.0.0.1,localhost' no_proxy='127.0.0.1,localhost'
mkdir -p "$WORK/aws" "$WORK/home"
export AWS_CONFIG_FILE="$WORK/aws/config"
export AWS_SHARED_CREDENTIALS_FILE="$WORK/aws/credentials"
: >"$AWS_SHARED_CREDENTIALS_FILE"
cat >"$AWS_CONFIG_FILE" <<'EOF'
[default]
region = auto
s3 =
  addressing_style = path
  multipart_threshold = 5MB
  multipart_chunksize = 5MB
  max_concurrent_requests = 4
EOF
export AWS_DEFAULT_REGION=auto AWS_REGION=auto
export AWS_EC2_METADATA_DISABLED=true AWS_PAGER="" AWS_MAX_ATTEMPTS=1
export AWS_RETRY_MODE=standard

# --- the server ----------------------------------------------------------------------

start_server() { # start_server [extra serve args...]
  require_tfork
  mkdir -p "$WORK/data"
  "$TFORK" serve --data "$WORK/data" --listen 127.0.0.1:0 "$@" \
    >"$WORK/serve.out" 2>"$WORK/serve.err" </dev/null &
  SERVER_PID=$!
  local deadline=$((SECONDS + SERVER_START_TIMEOUT))
  while :; do
    if grep -q '^export AWS_ENDPOINT_URL=' "$WORK/serve.out" 2>/dev/null &&
      grep -q '^export AWS_ACCESS_KEY_ID=' "$WORK/serve.out" 2>/dev/null &&
      grep -q '^export AWS_SECRET_ACCESS_KEY=' "$WORK/serve.out" 2>/dev/null; then
      break
    fi
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      wait "$SERVER_PID" 2>/dev/null && rc=0 || rc=$?
      SERVER_PID=""
      cat "$WORK/serve.out" >&2 || true
      fail "'tfork serve' exited (status $rc) before printing its export lines"
    fi
    ((SECONDS < deadline)) ||
      fail "'tfork serve' printed no export lines within ${SERVER_START_TIMEOUT}s (stdout: $(head -c 500 "$WORK/serve.out"))"
    sleep 0.1
  done
  # Only the `export NAME=value` lines, exactly as a user would eval them.
  eval "$(grep -E '^export [A-Za-z_][A-Za-z0-9_]*=' "$WORK/serve.out")"
  ENDPOINT=$AWS_ENDPOINT_URL
  ROOT_AK=$AWS_ACCESS_KEY_ID
  ROOT_SK=$AWS_SECRET_ACCESS_KEY
  [[ "$ENDPOINT" =~ ^http://127\.0\.0\.1:[0-9]+$ ]] ||
    fail "unexpected AWS_ENDPOINT_URL printed by serve: [$ENDPOINT]"
  [[ "${AWS_REGION:-}" == auto ]] || fail "serve printed AWS_REGION=[${AWS_REGION:-}] instead of auto"
  export AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION
  export AWS_DEFAULT_REGION=auto
  step "server pid $SERVER_PID at $ENDPOINT"
}

# stop_server: SIGTERM and expect a clean exit 0 within 10 s (cli.md §8).
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

server_alive() {
  [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null
}

# --- clients -------------------------------------------------------------------------

# aws_cli ARGS...: the Debian AWS CLI v2 against the server, bounded in time.
aws_cli() {
  timeout "$CLIENT_TIMEOUT" "$AWS_BIN" --endpoint-url "$ENDPOINT" --region auto \
    --no-cli-pager --cli-read-timeout 60 --cli-connect-timeout 10 "$@"
}

require_aws_cli() {
  [[ -x "$AWS_BIN" ]] || skip "the Debian AWS CLI ($AWS_BIN) is not installed (scripts/bootstrap installs awscli)"
}

# tfork_cli ARGS...: the project's CLI with the server's environment, bounded in time.
tfork_cli() {
  timeout "$CLIENT_TIMEOUT" "$TFORK" "$@"
}

# ensure_node: make sure tests/node/node_modules holds the locked packages. Installs
# (npm ci) only when node_modules is missing or older than package-lock.json; several
# tests running at once take turns through a lock. Skips (125) only when the registry is
# unreachable and nothing is installed.
ensure_node() {
  require_cmd node npm
  local lock="${TMPDIR:-/tmp}/tfork-e2e-npm-ci.$(id -u).lock"
  local marker="$NODE_DIR/node_modules/.package-lock.json"
  (
    flock -w 600 9 || fail "timed out waiting for another test's npm ci"
    if [[ -f "$marker" && ! "$NODE_DIR/package-lock.json" -nt "$marker" &&
      -d "$NODE_DIR/node_modules/@tigrisdata/storage" &&
      -d "$NODE_DIR/node_modules/@tigrisdata/iam" &&
      -d "$NODE_DIR/node_modules/@aws-sdk/client-s3" ]]; then
      exit 0
    fi
    echo "installing tests/node packages from the lockfile (npm ci)" >&2
    if timeout 600 npm ci --prefix "$NODE_DIR" --no-audit --no-fund --loglevel=error >&2; then
      exit 0
    fi
    if [[ -d "$NODE_DIR/node_modules/@tigrisdata/storage" ]]; then
      echo "npm ci failed; using the node_modules already present" >&2
      exit 0
    fi
    exit 125
  ) 9>"$lock" || {
    local rc=$?
    [[ $rc == 125 ]] && skip "the npm registry is unreachable and tests/node/node_modules is absent (run: npm ci --prefix tests/node)"
    fail "npm ci --prefix tests/node failed"
  }
}

# run_node SCRIPT.mjs [ARGS...]: run a tests/node script with the server's environment.
# The working directory is $WORK so that no stray .env file is read by the Tigris SDK.
run_node() {
  local script=$1
  shift
  (cd "$WORK" && NODE_PATH="$NODE_DIR/node_modules" timeout "$CLIENT_TIMEOUT" \
    node "$NODE_DIR/$script" "$@")
}
