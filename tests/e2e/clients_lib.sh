# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Helpers for the end-to-end tests that drive real third-party clients (AWS CLI, curl,
# the npm AWS and Tigris SDKs) and the tfork CLI against a real `tfork serve`.
#
# It builds on lib.sh (server start/stop, assertions, the curl `s3`/`iam` helpers) and adds:
#   aws_cli ARGS...   /usr/bin/aws pointed at the server (isolated config, no pager, path style)
#   tfork_cli ARGS... the project's CLI, bounded in time
#   buckets_named, keys_named PATTERN  what the server holds, listed without tfork's own code
#   ensure_node       makes sure tests/node/node_modules is installed (npm ci, once)
#   run_node F.mjs    runs tests/node/F.mjs with the server's environment
#   md5_of, multipart_etag FILE PART_SIZE
#
#     source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"
#     start_server
#
# Exit codes: 0 pass, 1 fail, 125 skipped (with the reason on stderr).
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  # The CMake glob registers every tests/e2e/*.sh; this one is only a helper.
  echo "SKIP clients_lib.sh: a helper sourced by the client tests; nothing to run" >&2
  exit 125
fi
_clients_test_name=$(basename "${BASH_SOURCE[1]:-$0}")
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TEST_NAME=$_clients_test_name

NODE_DIR="$SOURCE_DIR/tests/node"
AWS_BIN=${AWS_BIN:-/usr/bin/aws}
CLIENT_TIMEOUT=${CLIENT_TIMEOUT:-180}

# Isolate every client from the developer's own AWS/Tigris configuration.
unset AWS_SECURITY_TOKEN AWS_CA_BUNDLE AWS_ROLE_ARN AWS_WEB_IDENTITY_TOKEN_FILE \
  TIGRIS_STORAGE_ACCESS_KEY_ID TIGRIS_STORAGE_SECRET_ACCESS_KEY TIGRIS_STORAGE_ENDPOINT \
  TIGRIS_IAM_ENDPOINT TIGRIS_STORAGE_BUCKET TIGRIS_SESSION_TOKEN TIGRIS_ORGANIZATION_ID \
  TFORK_OUTPUT || true
mkdir -p "$WORK/aws"
export AWS_CONFIG_FILE="$WORK/aws/config"
export AWS_SHARED_CREDENTIALS_FILE="$WORK/aws/credentials"
: >"$AWS_SHARED_CREDENTIALS_FILE"
cat >"$AWS_CONFIG_FILE" <<'EOF_CONFIG'
[default]
region = auto
s3 =
  addressing_style = path
  multipart_threshold = 5MB
  multipart_chunksize = 5MB
  max_concurrent_requests = 4
EOF_CONFIG
export AWS_DEFAULT_REGION=auto AWS_REGION=auto
export AWS_EC2_METADATA_DISABLED=true AWS_PAGER="" AWS_MAX_ATTEMPTS=1 AWS_RETRY_MODE=standard

# --- clients -------------------------------------------------------------------------

# aws_cli ARGS...: the Debian AWS CLI v2 against the server, bounded in time.
aws_cli() {
  timeout "$CLIENT_TIMEOUT" "$AWS_BIN" --endpoint-url "$ENDPOINT" --region auto \
    --no-cli-pager --cli-read-timeout 60 --cli-connect-timeout 10 "$@"
}

require_aws_cli() {
  [[ -x "$AWS_BIN" ]] || skip "the Debian AWS CLI ($AWS_BIN) is not installed (scripts/bootstrap installs awscli)"
}

# keys_named PATTERN: ids of the server's access keys whose name matches the shell PATTERN
# (raw IAM ListAccessKeys through curl, so not through tfork's own code).
keys_named() {
  # "?Detailed=": curl 7.88 signs a bare "?Detailed" differently from the server's canonical
  # query. On any failure the function prints LISTING-FAILED so that no check passes by
  # accident on an empty answer.
  local body
  body=$(curl -sS --fail --aws-sigv4 "aws:amz:auto:s3" --user "$ROOT_AK:$ROOT_SK" -X POST \
    -H 'Accept: application/json' -H 'Content-Type: application/x-www-form-urlencoded' \
    --data 'Action=ListAccessKeys&MaxItems=1000' "$ENDPOINT/?Detailed=") || {
    echo LISTING-FAILED
    return 0
  }
  /usr/bin/python3 -c '
import fnmatch, json, sys
for k in json.loads(sys.argv[2]).get("Keys") or []:
    if fnmatch.fnmatch(k.get("username", ""), sys.argv[1]):
        print(k["access_key_id"])' "$1" "$body" || echo LISTING-FAILED
}

# buckets_named PATTERN: the server's buckets matching the shell PATTERN (root credentials).
buckets_named() {
  local body
  body=$(aws_cli s3api list-buckets --output json) || {
    echo LISTING-FAILED
    return 0
  }
  /usr/bin/python3 -c '
import fnmatch, json, sys
for b in json.loads(sys.argv[2] or "{}").get("Buckets") or []:
    if fnmatch.fnmatch(b["Name"], sys.argv[1]):
        print(b["Name"])' "$1" "$body" || echo LISTING-FAILED
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
  # TFORK_LOCK_DIR: tests/sanitizer/run.sh gives each test a TMPDIR of its own.
  local lock="${TFORK_LOCK_DIR:-${TMPDIR:-/tmp}}/tfork-e2e-npm-ci.$(id -u).lock"
  local marker="$NODE_DIR/node_modules/.package-lock.json"
  (
    flock -w 600 9 || fail "timed out waiting for another test's npm ci"
    if [[ -f "$marker" && ! "$NODE_DIR/package-lock.json" -nt "$marker" &&
      -d "$NODE_DIR/node_modules/@tigrisdata/storage" &&
      -d "$NODE_DIR/node_modules/@tigrisdata/iam" &&
      -d "$NODE_DIR/node_modules/@aws-sdk/client-s3" &&
      -d "$NODE_DIR/node_modules/@tigrisdata/cli" ]]; then
      exit 0
    fi
    echo "installing tests/node packages from the lockfile (npm ci)" >&2
    # --ignore-scripts (also in tests/node/.npmrc): the Tigris CLI's postinstall writes into
    # the home directory.
    if timeout 600 npm ci --prefix "$NODE_DIR" --ignore-scripts --no-audit --no-fund \
      --loglevel=error >&2; then
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


md5_of() { md5sum "$1" | cut -d' ' -f1; }

# multipart_etag FILE PART_SIZE: the S3 multipart ETag (md5 of the parts' binary md5s, -N).
multipart_etag() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import hashlib, sys
path, size = sys.argv[1], int(sys.argv[2])
digests = []
with open(path, "rb") as f:
    while True:
        chunk = f.read(size)
        if not chunk:
            break
        digests.append(hashlib.md5(chunk).digest())
print(f'"{hashlib.md5(b"".join(digests)).hexdigest()}-{len(digests)}"')
PY
}
