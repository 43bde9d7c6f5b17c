#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `tfork serve` against curl --aws-sigv4: S3 round trips, snapshots, forks, a scoped key
# minted through IAM, force delete, survival of bad input, and a kill -9 crash test.
source "$(dirname "$0")/lib.sh"
require_cmd curl python3 sha256sum
start_server

step "the data directory and everything in it is private to its owner (secrets live in meta.db)"
s3 PUT /perm-check && check_status 200
check_eq "data directory mode" 700 "$(stat -c %a "$DATA_DIR")"
for file in "$DATA_DIR"/meta.db "$DATA_DIR"/LOCK; do
  check_eq "mode of $(basename "$file")" 600 "$(stat -c %a "$file")"
done
s3 DELETE /perm-check && check_status 204

step "curl without x-amz-content-sha256 is refused like real S3"
status=$(curl -sS -o "$WORK/out" -w '%{http_code}' --aws-sigv4 "aws:amz:auto:s3" \
  --user "$ROOT_AK:$ROOT_SK" "$ENDPOINT/")
check_eq "status" 400 "$status"
check_contains "body" "$(cat "$WORK/out")" "x-amz-content-sha256"

step "plain bucket and object round trip"
s3 PUT /plain-bucket
check_status 200
check_eq "Location" "/plain-bucket" "$(header_value Location)"
s3 PUT /plain-bucket
check_code 409 BucketAlreadyOwnedByYou
random_file "$WORK/blob" 300000
s3 PUT "/plain-bucket/dir/blob%20one.bin" --body-file "$WORK/blob" -H 'Content-Type: application/x-test' \
  -H 'x-amz-meta-purpose: e2e'
check_status 200
check_eq "ETag" "\"$(md5sum "$WORK/blob" | cut -d' ' -f1)\"" "$(header_value ETag)"
s3 GET "/plain-bucket/dir/blob%20one.bin"
check_status 200
check_eq "content" "$(sha256_of "$WORK/blob")" "$(sha256_of "$S3_BODY_FILE")"
check_eq "Content-Type" "application/x-test" "$(header_value Content-Type)"
check_eq "metadata" "e2e" "$(header_value x-amz-meta-purpose)"
s3 HEAD "/plain-bucket/dir/blob%20one.bin"
check_status 200
check_eq "Content-Length" 300000 "$(header_value Content-Length)"
s3 GET "/plain-bucket/dir/blob%20one.bin" -H 'Range: bytes=100-199'
check_status 206
check_eq "range length" 100 "$(stat -c %s "$S3_BODY_FILE")"
check_eq "Content-Range" "bytes 100-199/300000" "$(header_value Content-Range)"
s3 GET "/plain-bucket/dir/blob%20one.bin" -H 'Range: bytes=0-1,5-6'
check_status 200
s3 GET "/plain-bucket/dir/blob%20one.bin" -H 'Range: bytes=300000-'
check_code 416 InvalidRange
s3 GET "/plain-bucket?encoding-type=url&list-type=2&prefix=dir%2F"
check_status 200
check_contains "listing" "$S3_BODY" "<Key>dir/blob%20one.bin</Key>"
check_contains "listing" "$S3_BODY" "<EncodingType>url</EncodingType>"
s3 GET /plain-bucket/missing
check_code 404 NoSuchKey
s3 PUT "/plain-bucket/$(printf 'k%.0s' {1..1025})" --body x
check_code 400 KeyTooLongError
s3 DELETE "/plain-bucket/dir/blob%20one.bin"
check_status 204

step "snapshot-enabled bucket, named snapshot, read at the snapshot"
s3 PUT /source-bucket -H 'X-Tigris-Enable-Snapshot: true'
check_status 200
s3 HEAD /source-bucket
check_eq "snapshots enabled" true "$(header_value X-Tigris-Enable-Snapshot)"
s3 PUT /source-bucket/data.txt --body "version one"
check_status 200
s3 PUT /source-bucket -H 'X-Tigris-Snapshot: true; name=baseline run'
check_status 200
version=$(header_value X-Tigris-Snapshot-Version)
[[ "$version" =~ ^[0-9]{19}$ ]] || fail "snapshot version [$version] is not a 19-digit ns timestamp"
s3 PUT /source-bucket/data.txt --body "version two"
check_status 200
s3 GET /source-bucket/data.txt -H "X-Tigris-Snapshot-Version: $version"
check_eq "snapshot read" "version one" "$S3_BODY"
s3 GET / -H 'X-Tigris-Snapshot: source-bucket'
check_status 200
check_contains "snapshot list" "$S3_BODY" "<Name>$version; name=baseline run</Name>"

step "fork from the snapshot, fork isolation"
s3 PUT /fork-one -H 'X-Tigris-Fork-Source-Bucket: source-bucket' \
  -H "X-Tigris-Fork-Source-Bucket-Snapshot: $version"
check_status 200
s3 HEAD /fork-one
check_eq "fork source" source-bucket "$(header_value X-Tigris-Fork-Source-Bucket)"
check_eq "fork snapshot" "$version" "$(header_value X-Tigris-Fork-Source-Bucket-Snapshot)"
s3 HEAD /source-bucket
check_eq "is fork parent" true "$(header_value X-Tigris-Is-Fork-Parent)"
s3 GET /fork-one/data.txt
check_eq "fork sees the snapshot" "version one" "$S3_BODY"
s3 PUT /fork-one/only-in-fork.txt --body "fork write"
check_status 200
s3 GET /source-bucket/only-in-fork.txt
check_code 404 NoSuchKey
s3 DELETE /fork-one/data.txt
check_status 204
s3 GET /source-bucket/data.txt
check_eq "source untouched" "version two" "$S3_BODY"
s3 GET / -H 'X-Tigris-Fork: source-bucket' -H 'Accept: application/json'
check_status 200
check_eq "fork listing" fork-one "$(json_get 'd["Buckets"]["Bucket"][0]["Name"]' <<<"$S3_BODY")"

step "a scoped Editor key minted through IAM"
req=$(printf '{"req_uuid":"%s","name":"fork-one-key","buckets_role":[{"bucket":"fork-one","role":"Editor"}]}' \
  "$(cat /proc/sys/kernel/random/uuid)")
iam "Action=CreateAccessKeyWithBucketsRole" "Req=$(urlencode "$req")"
check_status 200
key_id=$(json_get 'd["CreateAccessKeyResult"]["AccessKey"]["AccessKeyId"]' <<<"$S3_BODY")
key_secret=$(json_get 'd["CreateAccessKeyResult"]["AccessKey"]["SecretAccessKey"]' <<<"$S3_BODY")
[[ "$key_id" == tid_* && "$key_secret" == tsec_* ]] || fail "unexpected key [$key_id]"
s3 --as "$key_id:$key_secret" PUT /fork-one/by-agent.txt --body "agent"
check_status 200
s3 --as "$key_id:$key_secret" GET /source-bucket/data.txt
check_code 403 AccessDenied
s3 --as "$key_id:$key_secret" PUT /plain-bucket/x --body "x"
check_code 403 AccessDenied
iam "Detailed=" "Action=ListAccessKeys&KeyId=$key_id"
check_status 200
check_eq "listed role" Editor "$(json_get 'd["Keys"][0]["buckets_role"][0]["role"]' <<<"$S3_BODY")"
iam "Action=DeleteAccessKey" "Action=DeleteAccessKey&Version=2010-05-08&AccessKeyId=$key_id"
check_status 200
s3 --as "$key_id:$key_secret" GET /fork-one/by-agent.txt
check_code 403 InvalidAccessKeyId
iam "Action=DeleteAccessKey" "Action=DeleteAccessKey&AccessKeyId=$key_id"
check_code 404 NoSuchEntity

step "delete order: forks first, force delete"
s3 DELETE /source-bucket -H 'Tigris-Force-Delete: true'
check_code 409 BucketHasForks
s3 DELETE /fork-one
check_code 409 BucketNotEmpty
s3 DELETE /fork-one -H 'Tigris-Force-Delete: true'
check_status 204
s3 DELETE /source-bucket -H "X-Tigris-Snapshot-Version: $version"
check_status 204
s3 DELETE /source-bucket -H "X-Tigris-Snapshot-Version: $version"
check_code 404 NoSuchSnapshot
s3 DELETE /source-bucket -H 'X-Tigris-Force-Delete: true'
check_status 204
s3 HEAD /source-bucket
check_status 404

step "bad input does not take the server down"
port=${ENDPOINT##*:}
# Garbage instead of HTTP, a truncated body, a lying Content-Length, random bytes.
printf 'THIS IS NOT HTTP\r\n\r\n' | timeout 5 curl -sS "telnet://127.0.0.1:$port" >/dev/null 2>&1 || true
head -c 4096 /dev/urandom | timeout 5 curl -sS "telnet://127.0.0.1:$port" >/dev/null 2>&1 || true
printf 'PUT /plain-bucket/t HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nshort' |
  timeout 5 curl -sS "telnet://127.0.0.1:$port" >/dev/null 2>&1 || true
s3 POST "/plain-bucket?delete=" --body '<Delete><Object><Key>x</Key>'
check_code 400 MalformedXML
s3 GET "/plain-bucket?continuation-token=%25%25&list-type=2"
check_code 400 InvalidArgument
s3 GET "/plain-bucket/%zz"
check_status 400
curl -sS -o /dev/null -H 'Authorization: AWS4-HMAC-SHA256 Credential=x' "$ENDPOINT/" || true
server_alive || fail "the server died on bad input"
s3 HEAD /plain-bucket
check_status 200

step "SIGTERM exits 0"
stop_server

step "crash test: concurrent PUTs, kill -9, restart, acknowledged objects intact"
start_server
s3 PUT /crash-bucket
check_status 200
mkdir -p "$WORK/crash" "$WORK/acks"
for i in $(seq 1 24); do random_file "$WORK/crash/$i" $((200000 + i * 997)); done
put_one() { # put_one I [curl args]: the acknowledgement is written only after a 200
  local i=$1 hash code
  shift
  hash=$(sha256_of "$WORK/crash/$i")
  code=$(curl -sS --max-time 30 --aws-sigv4 "aws:amz:auto:s3" --user "$ROOT_AK:$ROOT_SK" \
    -H "x-amz-content-sha256: $hash" -X PUT --data-binary "@$WORK/crash/$i" "$@" \
    -o /dev/null -w '%{http_code}' "$ENDPOINT/crash-bucket/obj-$i" 2>/dev/null) || true
  [[ "$code" == 200 ]] && echo "$hash" >"$WORK/acks/$i"
  return 0
}
# Twelve quick PUTs and twelve throttled ones that are still uploading at the crash.
pids=()
for i in $(seq 1 24); do
  if ((i % 2)); then put_one "$i" & else put_one "$i" --limit-rate 50K & fi
  pids+=($!)
done
deadline=$((SECONDS + 20))
until (($(find "$WORK/acks" -type f | wc -l) >= 8)) || ((SECONDS > deadline)); do sleep 0.05; done
kill_server
for pid in "${pids[@]}"; do wait "$pid" || true; done
acked=$(find "$WORK/acks" -type f | wc -l)
step "$acked of 24 PUTs were acknowledged before the crash"
((acked > 0)) || fail "no PUT was acknowledged before kill -9; the test proves nothing"
old_key=$ROOT_AK
start_server
check_eq "root key after restart" "$old_key" "$ROOT_AK"
for ack in "$WORK"/acks/*; do
  i=$(basename "$ack")
  s3 GET "/crash-bucket/obj-$i"
  check_status 200 "acknowledged object obj-$i after restart"
  check_eq "content of obj-$i" "$(cat "$ack")" "$(sha256_of "$S3_BODY_FILE")"
done
s3 GET "/crash-bucket?list-type=2"
check_status 200
stop_server
step "pass"
