#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 9 §5): the official Tigris CLI (@tigrisdata/cli, locked in tests/node)
# against a real `tfork serve`. `tigris buckets get` and `tigris stat t3://B` (GET
# /B?metadata&with-size=true) show a bucket's object count and size, through a fork chain
# too; `tigris stat` (the JSON bucket listing with IncludeStats=true) shows the account's
# totals; `tigris presign` (POST /?func=presign) gives GET and PUT URLs that work, signed with
# the caller's own key and refused for a bucket that key cannot reach; `tigris access-keys
# rotate` (IAM RotateAccessKey) gives a new secret that works while the old one stops.
# Skipped (exit 125) only when node/npm are missing.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

ensure_node
TIGRIS_JS="$NODE_DIR/node_modules/@tigrisdata/cli/dist/cli.js"
[[ -f "$TIGRIS_JS" ]] || fail "the Tigris CLI is not installed in tests/node (npm ci)"
start_server
OUT="$WORK/out"
mkdir -p "$OUT" "$WORK/home"

# tigris ARGS...: the CLI with the server's root keys from the environment, an empty HOME (no
# ~/.tigris/config.json, no ~/.aws), its S3 and IAM endpoints the server. Output in
# $OUT/tigris.out and .err; exit code in TIGRIS_RC.
tigris() {
  TIGRIS_RC=0
  HOME="$WORK/home" NODE_NO_WARNINGS=1 AWS_ENDPOINT_URL_S3="$ENDPOINT" \
    AWS_ENDPOINT_URL_IAM="$ENDPOINT" timeout "$CLIENT_TIMEOUT" node "$TIGRIS_JS" "$@" \
    </dev/null >"$OUT/tigris.out" 2>"$OUT/tigris.err" || TIGRIS_RC=$?
}
tigris_ok() {
  tigris "$@"
  [[ $TIGRIS_RC == 0 ]] ||
    fail "tigris $*: exit $TIGRIS_RC: $(cat "$OUT/tigris.out" "$OUT/tigris.err" | head -c 800)"
}
# row NAME: the value of one row of the last `--format json` table (stat: metric/value,
# buckets get: property/value).
row() {
  json_get "next((x['value'] for x in d if x.get('metric', x.get('property')) == '$1'), 'MISSING')" \
    <"$OUT/tigris.out"
}
put_bytes() { # put_bytes BUCKET KEY BYTES
  random_file "$WORK/body" "$3"
  s3 PUT "/$1/$2" --body-file "$WORK/body"
  check_status 200
}

step "a snapshot-enabled source with 3 objects of 100, 250 and 7 bytes (357 B)"
"$TFORK" bucket create tc-src --snapshots >/dev/null
put_bytes tc-src a.bin 100
put_bytes tc-src dir/b.bin 250
put_bytes tc-src dir/sub/c.bin 7

step "tigris buckets get: the object count and size"
tigris_ok buckets get tc-src --format json
check_eq "buckets get: name" "tc-src" "$(row Name)"
check_eq "buckets get: objects" "3" "$(row 'Number of Objects')"
check_eq "buckets get: size" "357 B" "$(row 'Total Size')"
check_eq "buckets get: all versions" "3" "$(row 'All Versions Count')"
check_eq "buckets get: snapshots" "Yes" "$(row 'Snapshots Enabled')"

step "tigris stat t3://BUCKET: the same numbers, in its table form too"
tigris_ok stat t3://tc-src --format json
check_eq "stat bucket: objects" "3" "$(row 'Number of Objects')"
check_eq "stat bucket: size" "357 B" "$(row 'Total Size')"
tigris_ok stat t3://tc-src
check_contains "stat table" "$(cat "$OUT/tigris.out")" "Number of Objects"
[[ "$(grep 'Number of Objects' "$OUT/tigris.out")" =~ [^0-9]3[^0-9] ]] ||
  fail "stat table: $(cat "$OUT/tigris.out")"

step "a fork: overwrite a.bin with 30 bytes, delete c.bin, add d.bin of 50 bytes"
"$TFORK" fork create tc-src -n 1 --prefix tcf --keys none --manifest "$WORK/m.json" >/dev/null
put_bytes tcf-1 a.bin 30
s3 DELETE /tcf-1/dir/sub/c.bin
check_status 204
put_bytes tcf-1 d.bin 50
tigris_ok buckets get tcf-1 --format json
check_eq "fork: objects through the chain" "3" "$(row 'Number of Objects')"
check_eq "fork: size through the chain" "330 B" "$(row 'Total Size')"
check_eq "fork: forked from" "tc-src" "$(row 'Forked From')"
tigris_ok buckets get tc-src --format json
check_eq "source unchanged: objects" "3" "$(row 'Number of Objects')"
check_eq "source unchanged: size" "357 B" "$(row 'Total Size')"
check_eq "source has forks" "Yes" "$(row 'Has Forks')"

step "an empty bucket reads 0 and 0 B"
"$TFORK" bucket create tc-empty >/dev/null
tigris_ok buckets get tc-empty --format json
check_eq "empty: objects" "0" "$(row 'Number of Objects')"
check_eq "empty: size" "0 B" "$(row 'Total Size')"

step "tigris stat: the account's totals over every bucket (3 + 3 + 0 objects, 687 B)"
tigris_ok stat --format json
check_eq "stat: buckets" "3" "$(row 'Active Buckets')"
check_eq "stat: objects" "6" "$(row 'Total Objects')"
check_eq "stat: unique objects" "6" "$(row 'Total Unique Objects')"
check_eq "stat: storage" "687 B" "$(row 'Total Storage')"

step "tigris presign: a GET URL that serves the object, to anyone holding it"
tigris_ok presign t3://tc-src/dir/b.bin
url=$(tr -d '\n' <"$OUT/tigris.out")
check_contains "presigned with the caller's key" "$url" "X-Amz-Credential=$ROOT_AK"
check_not_contains "no secret in the URL" "$url" "$ROOT_SK"
curl -sS --fail -o "$WORK/got" "$url" || fail "the presigned GET failed: $url"
s3 GET /tc-src/dir/b.bin
cmp -s "$WORK/got" "$S3_BODY_FILE" || fail "the presigned GET returned other bytes"
other_url=${url/\/dir\/b.bin\?//a.bin?}
[[ "$other_url" != "$url" ]] || fail "unexpected presigned URL form: $url"
status=$(curl -sS -o /dev/null -w '%{http_code}' "$other_url")
[[ $status == 403 ]] || fail "a presigned URL used for another key: HTTP $status, expected 403"

step "tigris presign --method put: a PUT URL that stores the body"
tigris_ok presign t3://tc-src/uploaded.bin --method put --expires-in 600 --format json
url=$(json_get 'd["url"]' <"$OUT/tigris.out")
check_eq "expires" "600" "$(json_get 'd["expiresIn"]' <"$OUT/tigris.out")"
random_file "$WORK/upload" 4321
curl -sS --fail -T "$WORK/upload" "$url" >/dev/null || fail "the presigned PUT failed"
s3 GET /tc-src/uploaded.bin
check_status 200
cmp -s "$WORK/upload" "$S3_BODY_FILE" || fail "the presigned PUT stored other bytes"

step "tigris access-keys create and assign (Editor on tc-empty)"
tigris_ok access-keys create tc-key --format json
key_id=$(json_get 'd["id"]' <"$OUT/tigris.out")
old_secret=$(json_get 'd["secret"]' <"$OUT/tigris.out")
tigris_ok access-keys assign "$key_id" --bucket tc-empty --role Editor
s3 --as "$key_id:$old_secret" PUT /tc-empty/k.txt --body "with the first secret"
check_status 200

step "a scoped key presigns only for its bucket; the CLI shows the server's reason"
AWS_ACCESS_KEY_ID=$key_id AWS_SECRET_ACCESS_KEY=$old_secret tigris presign t3://tc-src/a.bin
[[ $TIGRIS_RC != 0 ]] || fail "a scoped key presigned a URL for a bucket it cannot read"
check_contains "presign refusal" "$(cat "$OUT/tigris.out" "$OUT/tigris.err")" \
  "may not read bucket tc-src"
AWS_ACCESS_KEY_ID=$key_id AWS_SECRET_ACCESS_KEY=$old_secret tigris presign t3://tc-empty/k.txt
check_eq "scoped presign of its own bucket: exit" "0" "$TIGRIS_RC"
check_contains "scoped presign key" "$(cat "$OUT/tigris.out")" "X-Amz-Credential=$key_id"

step "tigris access-keys rotate: the new secret works, the old one stops at once"
tigris_ok access-keys rotate "$key_id" --yes --format json
check_eq "rotated id" "$key_id" "$(json_get 'd["id"]' <"$OUT/tigris.out")"
new_secret=$(json_get 'd["secret"]' <"$OUT/tigris.out")
[[ "$new_secret" == tsec_* && "$new_secret" != "$old_secret" ]] || fail "rotate gave no new secret"
s3 --as "$key_id:$old_secret" GET /tc-empty/k.txt
check_code 403 SignatureDoesNotMatch "the old secret after rotate"
s3 --as "$key_id:$new_secret" GET /tc-empty/k.txt
check_status 200 "the new secret after rotate"
check_eq "content" "with the first secret" "$S3_BODY"
tigris_ok access-keys get "$key_id" --format json
check_contains "roles kept" "$(cat "$OUT/tigris.out")" "tc-empty"
check_not_contains "no secret in get" "$(cat "$OUT/tigris.out")" "$new_secret"

step "rotating an unknown key, or another bucket's key, fails with a reason the CLI shows"
tigris access-keys rotate tid_NoSuchKeyOnThisServer0 --yes
[[ $TIGRIS_RC != 0 ]] || fail "rotating an unknown key succeeded"
check_contains "unknown key" "$(cat "$OUT/tigris.out" "$OUT/tigris.err")" "no such access key"
tigris_ok access-keys create tc-other --format json
other_id=$(json_get 'd["id"]' <"$OUT/tigris.out")
tigris_ok access-keys assign "$other_id" --bucket tc-src --role Editor
AWS_ACCESS_KEY_ID=$key_id AWS_SECRET_ACCESS_KEY=$new_secret tigris access-keys rotate \
  "$other_id" --yes
[[ $TIGRIS_RC != 0 ]] || fail "a key scoped to tc-empty rotated a key of tc-src"
check_contains "rotate refusal" "$(cat "$OUT/tigris.out" "$OUT/tigris.err")" "Editor on tc-src"

stop_server
step "PASS"
