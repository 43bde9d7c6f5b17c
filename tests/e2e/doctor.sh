#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tfork doctor (cli.md §14, issue 23 §4) against tfork serve: the configuration checks name
# where the credentials came from and never print a secret; a wrong secret fails the key
# check; --probe against plain serve reports every check ok or skipped and no quirk, against
# serve --quirks X reports X by name; nothing the probes made is left behind, also after a
# SIGINT or SIGTERM in the middle of --probe.
source "$(dirname "$0")/lib.sh"
require_cmd curl python3

# Every bucket and every access key on the server, sorted (root credentials, raw requests).
server_state() {
  s3 GET /
  [[ "$S3_STATUS" == 200 ]] || fail "ListBuckets for the state: HTTP $S3_STATUS"
  local buckets keys
  buckets=$(python3 -c 'import re, sys; print(" ".join(sorted(re.findall(r"<Name>(.*?)</Name>", sys.stdin.read()))))' <<<"$S3_BODY")
  keys=$(curl -sS --fail --aws-sigv4 "aws:amz:auto:s3" --user "$ROOT_AK:$ROOT_SK" -X POST \
    -H 'Accept: application/json' -H 'Content-Type: application/x-www-form-urlencoded' \
    --data 'Action=ListAccessKeys&MaxItems=1000' "$ENDPOINT/?Detailed=" |
    python3 -c 'import json, sys; print(" ".join(sorted(k["access_key_id"] for k in json.load(sys.stdin).get("Keys") or [])))') ||
    fail "ListAccessKeys for the state failed"
  printf 'buckets: %s\nkeys: %s\n' "$buckets" "$keys"
}

# A bucket and a key of the user's own, which the doctor must leave alone.
seed() {
  s3 PUT /users-data
  check_status 200 "seed bucket"
  iam "Action=CreateAccessKeyWithBucketsRole" \
    "Req=$(urlencode '{"name":"users-key","buckets_role":[{"bucket":"users-data","role":"Editor"}]}')"
  check_status 200 "seed key"
}

no_secret() { # no_secret WHAT: neither stdout nor stderr of the last expect_rc holds the secret
  check_not_contains "$1: stdout" "$(stdout)" "$ROOT_SK"
  check_not_contains "$1: stderr" "$(stderr)" "$ROOT_SK"
}

step "plain serve: configuration checks"
start_server
seed
before=$(server_state)
expect_rc "doctor" 0 tf doctor --json
no_secret "doctor"
check_eq "credential source" "environment (AWS_ACCESS_KEY_ID)" "$(json_get 'd["credential_source"]' <"$OUT/stdout")"
masked=$(json_get 'd["access_key_id"]' <"$OUT/stdout")
check_not_contains "the key id is masked" "$masked" "$ROOT_AK"
check_eq "masked key ends like the key" "${ROOT_AK: -4}" "${masked: -4}"
check_eq "the checks" '[["credentials", "ok"], ["endpoint", "ok"], ["tls", "ok"], ["clock", "ok"], ["key", "ok"], ["iam", "ok"]]' \
  "$(json_get '[[c["name"], c["status"]] for c in d["checks"]]' <"$OUT/stdout")"
check_eq "not a Tigris host" false "$(json_get 'd["tigris_host"]' <"$OUT/stdout")"
check_contains "tfork version" "$(json_get 'd["tfork_version"]' <"$OUT/stdout")" "."

step "credential sources: TIGRIS_STORAGE_* and a profile"
expect_rc "doctor with TIGRIS_STORAGE_*" 0 env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY \
  TIGRIS_STORAGE_ACCESS_KEY_ID="$ROOT_AK" TIGRIS_STORAGE_SECRET_ACCESS_KEY="$ROOT_SK" "$TFORK" doctor --json
no_secret "TIGRIS_STORAGE_*"
check_eq "TIGRIS_STORAGE_* named" "environment (TIGRIS_STORAGE_ACCESS_KEY_ID)" \
  "$(json_get 'd["credential_source"]' <"$OUT/stdout")"
printf '[doc]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$ROOT_AK" "$ROOT_SK" >"$WORK/credentials"
expect_rc "doctor --profile" 0 env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY \
  -u TIGRIS_STORAGE_ACCESS_KEY_ID -u TIGRIS_STORAGE_SECRET_ACCESS_KEY AWS_SHARED_CREDENTIALS_FILE="$WORK/credentials" AWS_CONFIG_FILE="$WORK/none" "$TFORK" doctor --profile doc --json
no_secret "--profile"
check_contains "the profile named" "$(json_get 'd["credential_source"]' <"$OUT/stdout")" "profile 'doc'"
check_contains "chosen by the flag" "$(json_get 'd["credential_source"]' <"$OUT/stdout")" "--profile"
expect_rc "doctor without credentials" 1 env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY \
  -u TIGRIS_STORAGE_ACCESS_KEY_ID -u TIGRIS_STORAGE_SECRET_ACCESS_KEY AWS_SHARED_CREDENTIALS_FILE="$WORK/none" AWS_CONFIG_FILE="$WORK/none" HOME="$WORK" "$TFORK" doctor --json
check_eq "no credentials: fail, then skips" '["fail", "ok", "skipped", "skipped", "skipped", "skipped"]' \
  "$(json_get '[c["status"] for c in d["checks"]]' <"$OUT/stdout")"

step "a wrong secret fails the key check, clearly, without printing it"
expect_rc "doctor with a wrong secret" 1 env AWS_SECRET_ACCESS_KEY=not-the-secret-4711 "$TFORK" doctor --json
check_not_contains "wrong secret not printed" "$(stdout)$(stderr)" "not-the-secret-4711"
check_eq "key check failed" fail "$(json_get '[c["status"] for c in d["checks"] if c["name"] == "key"][0]' <"$OUT/stdout")"
check_contains "says why" "$(json_get '[c["detail"] for c in d["checks"] if c["name"] == "key"][0]' <"$OUT/stdout")" \
  "SignatureDoesNotMatch"
check_contains "the error names the failed check" "$(stderr)" "key"
expect_rc "table output" 1 env AWS_SECRET_ACCESS_KEY=not-the-secret-4711 "$TFORK" doctor
check_contains "table row" "$(stdout)" "SignatureDoesNotMatch"

# skewed_endpoint SECONDS [CERT KEY]: a stand-in S3 endpoint whose Date header is SECONDS off
# the clock (it answers 200 to everything), over HTTPS with CERT; sets SKEWED_URL, SKEWED_PID.
skewed_endpoint() {
  rm -f "$WORK/skewed.port"
  python3 - "$1" "$WORK/skewed.port" "${2:-}" "${3:-}" <<'PY' &
import email.utils, http.server, ssl, sys, time
offset, port_file, cert, key = float(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
class Handler(http.server.BaseHTTPRequestHandler):
    def date_time_string(self, timestamp=None):
        return email.utils.formatdate(time.time() + offset, usegmt=True)
    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        body = b'{"Buckets": {"Bucket": []}, "Keys": []}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = answer
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
if cert:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
open(port_file + ".tmp", "w").write(str(server.server_address[1]))
import os; os.rename(port_file + ".tmp", port_file)
server.serve_forever()
PY
  SKEWED_PID=$!
  local deadline=$((SECONDS + 20))
  until [[ -s "$WORK/skewed.port" ]]; do
    ((SECONDS < deadline)) || fail "the stand-in endpoint did not start"
    sleep 0.05
  done
  SKEWED_URL="http${2:+s}://127.0.0.1:$(cat "$WORK/skewed.port")"
}
stop_skewed() {
  kill "$SKEWED_PID"
  wait "$SKEWED_PID" 2>/dev/null || true
}

step "the clock against the server's Date: a warning past a few seconds, a failure past 15 minutes"
skewed_endpoint -40
expect_rc "doctor, server 40 s behind" 0 tf doctor --endpoint-url "$SKEWED_URL" --json
check_eq "40 s: warn" warn "$(json_get '[c["status"] for c in d["checks"] if c["name"] == "clock"][0]' <"$OUT/stdout")"
check_eq "40 s: the skew" true "$(json_get '[abs(c["data"]["skew_seconds"] - 40) <= 2 for c in d["checks"] if c["name"] == "clock"][0]' <"$OUT/stdout")"
stop_skewed
skewed_endpoint 1200
expect_rc "doctor, server 20 min ahead" 1 tf doctor --endpoint-url "$SKEWED_URL" --json
check_eq "20 min: fail" fail "$(json_get '[c["status"] for c in d["checks"] if c["name"] == "clock"][0]' <"$OUT/stdout")"
check_contains "20 min: says why" "$(json_get '[c["detail"] for c in d["checks"] if c["name"] == "clock"][0]' <"$OUT/stdout")" "15 minutes"
stop_skewed

step "TLS: an unknown certificate fails, --no-verify-ssl warns, --ca-bundle verifies"
require_cmd openssl
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$WORK/tls.key" -out "$WORK/tls.crt" 2>/dev/null || fail "openssl could not make a certificate"
skewed_endpoint 0 "$WORK/tls.crt" "$WORK/tls.key"
tls_of() { json_get '[c["status"] + " " + c["detail"] for c in d["checks"] if c["name"] == "tls"][0]' <"$OUT/stdout"; }
expect_rc "doctor, unknown certificate" 1 tf doctor --endpoint-url "$SKEWED_URL" --json
check_contains "unknown certificate: fail" "$(tls_of)" "fail certificate verification failed"
expect_rc "doctor --no-verify-ssl" 0 tf doctor --endpoint-url "$SKEWED_URL" --no-verify-ssl --json
check_contains "--no-verify-ssl: warn" "$(tls_of)" "warn "
expect_rc "doctor --ca-bundle" 0 tf doctor --endpoint-url "$SKEWED_URL" --ca-bundle "$WORK/tls.crt" --json
check_contains "--ca-bundle: verified" "$(tls_of)" "ok HTTPS; certificate verified"
stop_skewed

step "plain serve: --probe, every check ok or skipped, no quirk, nothing left"
expect_rc "doctor --probe" 0 tf doctor --probe --json
no_secret "--probe"
check_eq "no quirks" "[]" "$(json_get 'd["quirks"]' <"$OUT/stdout")"
check_eq "no leftovers" "[]" "$(json_get 'd["leftovers"]' <"$OUT/stdout")"
check_eq "only ok and skipped" "[]" \
  "$(json_get '[[c["name"], c["status"], c["detail"]] for c in d["checks"] if c["status"] not in ("ok", "skipped")]' <"$OUT/stdout")"
for name in settings-addressing snapshots-on-delay snapshot-delete-gone rebase-own-writes merge-both-changed \
  parallel-forks parent-delete access-key-delete-twice fork-locations fork-listing snapshot-paging cleanup; do
  check_eq "probe $name ran" 1 "$(json_get "len([c for c in d['checks'] if c['name'] == '$name'])" <"$OUT/stdout")"
done
check_contains "run id" "$(json_get 'd["run_id"]' <"$OUT/stdout")" "tfork-doctor-"
check_eq "state after --probe" "$before" "$(server_state)"
expect_rc "doctor --probe (table)" 0 tf doctor --probe
check_contains "table: quirks" "$(stdout)" "quirks: none"
check_contains "table: leftovers" "$(stdout)" "left behind: nothing"
check_eq "state after the table run" "$before" "$(server_state)"
expect_rc "--probe --dry-run is a usage error" 64 tf doctor --probe --dry-run
stop_server

# The quirks this build's serve knows (its own error message lists them).
known_quirks=$("$TFORK" serve --quirks not-a-quirk --data "$WORK/none" --listen 127.0.0.1:0 2>&1 || true)
for quirk in fork-listing-ignores-header iam-message-errors snapshot-token-echo fork-conflict-409 \
  parent-delete-400 settings-delay snapshot-gone-400 merge-no-version-header; do
  if [[ "$known_quirks" != *"$quirk"* ]]; then
    # The three newest quirks come with a merge of main; until then serve cannot imitate them.
    case $quirk in
      settings-delay | snapshot-gone-400 | merge-no-version-header)
        step "serve --quirks $quirk: not in this build's serve yet; not tested"
        continue
        ;;
      *) fail "serve does not know the quirk $quirk: $known_quirks" ;;
    esac
  fi
  step "serve --quirks $quirk: reported by name"
  rm -rf "$DATA_DIR"
  start_server --quirks "$quirk"
  seed
  before=$(server_state)
  expect_rc "doctor --probe ($quirk)" 0 tf doctor --probe --json
  check_eq "$quirk reported" "[\"$quirk\"]" "$(json_get 'd["quirks"]' <"$OUT/stdout")"
  check_eq "$quirk: no leftovers" "[]" "$(json_get 'd["leftovers"]' <"$OUT/stdout")"
  check_eq "$quirk: state after" "$before" "$(server_state)"
  stop_server
done

# interrupt SIGNAL CODE WHAT PATTERN: doctor --probe against a slow server, the signal once a
# bucket matching PATTERN exists (no fixed sleep decides it), then nothing of its own is left.
interrupt() {
  local signal=$1 code=$2 pattern=$3 pid rc=0 deadline=$((SECONDS + 60))
  rm -rf "$DATA_DIR"
  start_server --latency 150
  seed
  before=$(server_state)
  "$TFORK" doctor --probe --json >"$WORK/int.out" 2>"$WORK/int.err" &
  pid=$!
  until s3 GET / && [[ "$S3_BODY" =~ \<Name\>$pattern\</Name\> ]]; do
    kill -0 "$pid" 2>/dev/null || fail "doctor ended before the $signal: $(cat "$WORK/int.err")"
    ((SECONDS < deadline)) || fail "no bucket matching $pattern appeared within 60 s"
    sleep 0.05
  done
  kill "-$signal" "$pid"
  wait "$pid" || rc=$?
  check_eq "$signal: exit code" "$code" "$rc"
  check_eq "$signal: interrupted in the document" true "$(json_get 'd["interrupted"]' <"$WORK/int.out")"
  check_eq "$signal: no leftovers" "[]" "$(json_get 'd["leftovers"]' <"$WORK/int.out")"
  check_eq "$signal: state after" "$before" "$(server_state)"
  stop_server
}
step "SIGINT once the probe bucket exists: exit 130, nothing left"
interrupt INT 130 'tfork-doctor-[0-9a-f]{8}'
step "SIGTERM once the first fork exists: exit 143, nothing left"
interrupt TERM 143 'tfork-doctor-[0-9a-f]{8}-m'

step "all doctor checks passed"
