#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end: curl --aws-sigv4 against a real `tfork serve`.
# Round trips (put/get/head/list/delete), then one error case after another: each must get
# the exact S3 status and error code in an XML body, and the server must keep serving
# afterwards (a GET of a known object still works). Presigned URLs are made with boto3
# (curl cannot presign) and fetched with curl.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

require_cmd curl
# The presigned URL checks need boto3: without it the test is a visible skip, not a pass.
/usr/bin/python3 -c 'import boto3' 2>/dev/null || skip "boto3 is not installed (python3-boto3), which presigns"
start_server

B=curl-bucket
OUT="$WORK/out"
mkdir -p "$OUT"

# still_serving: after an error case, the known object must still come back intact.
still_serving() {
  s3 GET "/$B/known.txt"
  check_status 200 "GET after the error case ($1)"
  check_eq "known object after $1" "known body" "$S3_BODY"
}

# raw_curl ARGS...: curl with root SigV4 and NO automatic x-amz-content-sha256 header.
raw_curl() {
  RAW_STATUS=$(curl -sS --max-time 60 --aws-sigv4 "aws:amz:auto:s3" --user "$ROOT_AK:$ROOT_SK" \
    -D "$OUT/raw.headers" -o "$OUT/raw.body" -w '%{http_code}' "$@") || RAW_STATUS=000
  RAW_BODY=$(cat "$OUT/raw.body" 2>/dev/null || true)
  RAW_HEADERS=$(tr -d '\r' <"$OUT/raw.headers" 2>/dev/null || true)
}

check_raw_error() { # check_raw_error STATUS CODE WHAT
  [[ "$RAW_STATUS" == "$1" ]] || fail "$3: expected HTTP $1, got $RAW_STATUS: $(head -c 600 <<<"$RAW_BODY")"
  [[ "$RAW_BODY" == *"<Code>$2</Code>"* ]] || fail "$3: expected <Code>$2</Code>, got: $(head -c 600 <<<"$RAW_BODY")"
  [[ "$RAW_BODY" == *"<Error>"* && "$RAW_BODY" == *"<Message>"* ]] || fail "$3: not an S3 error document: $RAW_BODY"
  grep -qi '^content-type: application/xml' <<<"$RAW_HEADERS" || fail "$3: error without Content-Type application/xml"
}

check_xml_error() { # check_xml_error (for the lib's s3 helper) STATUS CODE WHAT
  check_code "$1" "$2" "$3"
  [[ "$S3_BODY" == *"<Message>"* ]] || fail "$3: error without <Message>: $S3_BODY"
  grep -qi '^content-type: application/xml' <<<"$S3_HEADERS" || fail "$3: error without Content-Type application/xml"
  [[ -n "$(header_value x-amz-request-id)" ]] || fail "$3: error without x-amz-request-id"
}

# ---------------------------------------------------------------------------------------
step "create bucket, put/get/head/list/delete"
s3 PUT "/$B"
check_status 200 "create bucket"
check_eq "Location" "/$B" "$(header_value location)"
s3 PUT "/$B/known.txt" --body "known body" -H "Content-Type: text/plain"
check_status 200 "put known.txt"
check_eq "put ETag" "\"$(printf 'known body' | md5sum | cut -d' ' -f1)\"" "$(header_value etag)"
[[ -n "$(header_value x-amz-request-id)" ]] || fail "PUT response without x-amz-request-id"
s3 GET "/$B/known.txt"
check_status 200 "get known.txt"
check_eq "get body" "known body" "$S3_BODY"
check_eq "get content-type" "text/plain" "$(header_value content-type)"
[[ -n "$(header_value last-modified)" ]] || fail "GET without Last-Modified"
s3 HEAD "/$B/known.txt"
check_status 200 "head known.txt"
check_eq "head content-length" 10 "$(header_value content-length)"

step "keys with a space, '+', unicode and nested '/' (sent percent-encoded once)"
s3 PUT "/$B/dir%20one/a%2Bb/%C3%BCber%20%E2%9C%93.txt" --body "awkward"
check_status 200 "put awkward key"
s3 GET "/$B/dir%20one/a%2Bb/%C3%BCber%20%E2%9C%93.txt"
check_status 200 "get awkward key"
check_eq "awkward body" "awkward" "$S3_BODY"
s3 GET "/$B?list-type=2&prefix=dir%20one%2F"
check_status 200 "list by awkward prefix"
check_eq "listed awkward key" "dir one/a+b/über ✓.txt" "$(xml_value Key)"

step "ListObjectsV2: max-keys, continuation, delimiter (query sorted for curl's signer)"
for n in 1 2 3 4 5; do
  s3 PUT "/$B/list/item-$n" --body "$n"
  check_status 200 "put list/item-$n"
done
s3 PUT "/$B/list/sub/deeper" --body "d"
s3 GET "/$B?list-type=2&max-keys=2&prefix=list%2F"
check_status 200 "list page 1"
check_eq "page 1 IsTruncated" true "$(xml_value IsTruncated)"
check_eq "page 1 KeyCount" 2 "$(xml_value KeyCount)"
token=$(xml_value NextContinuationToken)
[[ -n "$token" ]] || fail "no NextContinuationToken"
s3 GET "/$B?continuation-token=$(urlencode "$token")&list-type=2&max-keys=100&prefix=list%2F"
check_status 200 "list page 2"
check_eq "page 2 IsTruncated" false "$(xml_value IsTruncated)"
check_eq "page 2 KeyCount" 4 "$(xml_value KeyCount)"
check_eq "page 2 first key" "list/item-3" "$(xml_value Key)"
s3 GET "/$B?delimiter=%2F&list-type=2&prefix=list%2F"
check_status 200 "delimited list"
check_contains "common prefix" "$S3_BODY" "<CommonPrefixes><Prefix>list/sub/</Prefix></CommonPrefixes>"
check_contains "namespace" "$S3_BODY" 'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"'

step "DeleteObject, then 404 NoSuchKey with an XML body; HEAD 404 without a body"
s3 DELETE "/$B/list/item-5"
check_status 204 "delete object"
s3 GET "/$B/list/item-5"
check_xml_error 404 NoSuchKey "get deleted key"
s3 HEAD "/$B/list/item-5"
check_status 404 "head deleted key"
s3 GET "/curl-no-such-bucket/x"
check_xml_error 404 NoSuchBucket "get from a missing bucket"

# --- authentication failures ------------------------------------------------------------
step "wrong secret: 403 SignatureDoesNotMatch"
s3 --as "$ROOT_AK:definitely-not-the-secret" GET "/$B/known.txt"
check_xml_error 403 SignatureDoesNotMatch "wrong secret"
still_serving "wrong secret"

step "unknown access key: 403 InvalidAccessKeyId"
s3 --as "tid_NOSUCHKEY000000:whatever" GET "/$B/known.txt"
check_xml_error 403 InvalidAccessKeyId "unknown access key"
still_serving "unknown access key"

step "anonymous request: 403 AccessDenied"
status=$(curl -sS --max-time 30 -o "$OUT/anon.body" -w '%{http_code}' "$ENDPOINT/$B/known.txt")
check_eq "anonymous GET status" 403 "$status"
check_contains "anonymous GET code" "$(cat "$OUT/anon.body")" "<Code>AccessDenied</Code>"
still_serving "anonymous request"

step "tampered payload: x-amz-content-sha256 of another body -> 400 XAmzContentSHA256Mismatch"
printf 'the real body' >"$OUT/real"
other_hash=$(printf 'some other body' | sha256sum | cut -d' ' -f1)
raw_curl -X PUT --data-binary "@$OUT/real" -H "x-amz-content-sha256: $other_hash" "$ENDPOINT/$B/tampered.txt"
check_raw_error 400 XAmzContentSHA256Mismatch "tampered payload"
s3 HEAD "/$B/tampered.txt"
check_status 404 "a rejected PUT stores nothing"
still_serving "tampered payload"

step "missing x-amz-content-sha256 -> 400"
raw_curl -X PUT --data-binary "@$OUT/real" "$ENDPOINT/$B/no-hash.txt"
[[ "$RAW_STATUS" == 400 ]] || fail "missing x-amz-content-sha256: expected 400, got $RAW_STATUS: $RAW_BODY"
check_contains "missing hash is an S3 error" "$RAW_BODY" "<Code>"
s3 HEAD "/$B/no-hash.txt"
check_status 404 "unhashed PUT stores nothing"
still_serving "missing x-amz-content-sha256"

step "stale x-amz-date (signed as given) -> 403 RequestTimeTooSkewed"
raw_curl -X GET -H "x-amz-date: 20200101T000000Z" -H "x-amz-content-sha256: $EMPTY_SHA256" "$ENDPOINT/$B/known.txt"
check_raw_error 403 RequestTimeTooSkewed "stale date"
still_serving "stale date"

step "Content-MD5 that does not match the body -> 400 BadDigest"
wrong_md5=$(printf 'not the body' | openssl dgst -md5 -binary | base64)
s3 PUT "/$B/bad-md5.txt" --body "the body" -H "Content-MD5: $wrong_md5"
check_xml_error 400 BadDigest "bad Content-MD5"
still_serving "bad Content-MD5"

# --- request-shape failures --------------------------------------------------------------
# (?delete= with the "=": curl 7.88 signs a bare "?delete" without it, unlike SigV4 and S3.)
step "malformed DeleteObjects XML -> 400 MalformedXML"
printf '<Delete><Object><Key>known.txt</Key></Object>' >"$OUT/malformed.xml"
md5=$(openssl dgst -md5 -binary "$OUT/malformed.xml" | base64)
s3 POST "/$B?delete=" --body-file "$OUT/malformed.xml" -H "Content-MD5: $md5" -H "Content-Type: application/xml"
check_xml_error 400 MalformedXML "malformed DeleteObjects"
still_serving "malformed DeleteObjects"

step "well-formed DeleteObjects with Content-MD5 works"
printf '<?xml version="1.0" encoding="UTF-8"?><Delete><Object><Key>list/item-1</Key></Object><Object><Key>list/missing</Key></Object></Delete>' >"$OUT/delete.xml"
md5=$(openssl dgst -md5 -binary "$OUT/delete.xml" | base64)
s3 POST "/$B?delete=" --body-file "$OUT/delete.xml" -H "Content-MD5: $md5" -H "Content-Type: application/xml"
check_status 200 "DeleteObjects"
check_contains "DeleteResult" "$S3_BODY" "<Deleted><Key>list/item-1</Key></Deleted>"
check_contains "missing key reported deleted" "$S3_BODY" "<Deleted><Key>list/missing</Key></Deleted>"

step "a 1024-byte key is fine, a 1025-byte key -> 400 KeyTooLongError"
key1024=$(printf 'k%.0s' $(seq 1 1024))
s3 PUT "/$B/$key1024" --body "max"
check_status 200 "1024-byte key"
s3 GET "/$B/$key1024"
check_eq "1024-byte key body" "max" "$S3_BODY"
s3 PUT "/$B/${key1024}x" --body "too long"
check_xml_error 400 KeyTooLongError "1025-byte key"
still_serving "1025-byte key"

step "unsatisfiable range -> 416 InvalidRange"
s3 GET "/$B/known.txt" -H "Range: bytes=100-200"
check_xml_error 416 InvalidRange "unsatisfiable range"
s3 GET "/$B/known.txt" -H "Range: bytes=6-"
check_status 206 "open-ended range"
check_eq "range body" "body" "$S3_BODY"
check_eq "Content-Range" "bytes 6-9/10" "$(header_value content-range)"
still_serving "range"

step "unknown snapshot version delete -> 404"
s3 PUT "/curl-snap" -H "X-Tigris-Enable-Snapshot: true"
check_status 200 "snapshot-enabled bucket"
s3 PUT "/curl-snap" -H "X-Tigris-Snapshot: true; name=curl snap"
check_status 200 "take snapshot"
version=$(header_value x-tigris-snapshot-version)
[[ "$version" =~ ^[0-9]{16,20}$ ]] || fail "snapshot version [$version]"
s3 DELETE "/curl-snap" -H "X-Tigris-Snapshot-Version: 1000000000000000000"
check_status 404 "unknown snapshot version delete"
s3 GET "/" -H "X-Tigris-Snapshot: curl-snap"
check_status 200 "list snapshots"
check_contains "the real snapshot survives" "$S3_BODY" "<Name>$version; name=curl snap</Name>"
s3 DELETE "/curl-snap" -H "X-Tigris-Snapshot-Version: $version"
[[ "$S3_STATUS" == 204 || "$S3_STATUS" == 200 ]] || fail "delete snapshot: HTTP $S3_STATUS $S3_BODY"
s3 GET "/" -H "X-Tigris-Snapshot: curl-snap"
check_not_contains "deleted snapshot" "$S3_BODY" "$version"
still_serving "unknown snapshot version"

step "bucket errors: BucketNotEmpty, NoSuchBucket, InvalidBucketName"
s3 DELETE "/$B"
check_xml_error 409 BucketNotEmpty "delete non-empty bucket"
s3 DELETE "/curl-no-such-bucket"
check_xml_error 404 NoSuchBucket "delete missing bucket"
s3 PUT "/UPPER_case_bucket"
check_xml_error 400 InvalidBucketName "invalid bucket name"
still_serving "bucket errors"

step "IAM signed with service 'iam' is accepted as well as 's3'"
status=$(curl -sS --max-time 30 --aws-sigv4 "aws:amz:auto:iam" --user "$ROOT_AK:$ROOT_SK" \
  -H "x-amz-content-sha256: $(printf 'Action=ListAccessKeys' | sha256sum | cut -d' ' -f1)" \
  -H 'Content-Type: application/x-www-form-urlencoded' -H 'Accept: application/json' \
  --data-binary 'Action=ListAccessKeys' -o "$OUT/iam.body" -w '%{http_code}' "$ENDPOINT/?Detailed=")
check_eq "IAM (service iam) status" 200 "$status"
check_contains "ListAccessKeys JSON" "$(cat "$OUT/iam.body")" '"Keys"'

# --- presigned URLs (made by boto3, fetched by curl) ---------------------------------------
presign() { # presign KEY EXPIRES
  /usr/bin/python3 - "$ENDPOINT" "$ROOT_AK" "$ROOT_SK" "$B" "$1" "$2" <<'PY'
import sys, boto3
from botocore.config import Config
endpoint, ak, sk, bucket, key, expires = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="auto", aws_access_key_id=ak,
                  aws_secret_access_key=sk,
                  config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
print(s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=int(expires)))
PY
}
step "presigned GET (boto3 presigns, curl fetches): works, tampered fails, expired fails"
url=$(presign "dir one/a+b/über ✓.txt" 300)
status=$(curl -sS --max-time 30 -o "$OUT/presigned.body" -w '%{http_code}' "$url")
check_eq "presigned GET status" 200 "$status"
check_eq "presigned GET body" "awkward" "$(cat "$OUT/presigned.body")"
status=$(curl -sS --max-time 30 -o "$OUT/presigned.body" -w '%{http_code}' "${url/X-Amz-Expires=300/X-Amz-Expires=301}")
check_eq "tampered presigned URL status" 403 "$status"
check_contains "tampered presigned URL" "$(cat "$OUT/presigned.body")" "<Code>SignatureDoesNotMatch</Code>"
url=$(presign known.txt 1)
# Asked until it is refused (a 1 s URL expires within a second or two; the deadline is
# generous): the answer then must be the expiry's.
deadline=$((SECONDS + 60))
while :; do
  status=$(curl -sS --max-time 30 -o "$OUT/presigned.body" -w '%{http_code}' "$url")
  [[ "$status" == 200 && SECONDS -lt deadline ]] || break
  sleep 0.2
done
check_eq "expired presigned URL status" 403 "$status"
check_contains "expired presigned URL" "$(cat "$OUT/presigned.body")" "<Code>AccessDenied</Code>"
still_serving "presigned URLs"

step "clean up: force delete both buckets"
s3 DELETE "/$B" -H "Tigris-Force-Delete: true"
[[ "$S3_STATUS" == 204 || "$S3_STATUS" == 200 ]] || fail "force delete: HTTP $S3_STATUS $S3_BODY"
s3 DELETE "/curl-snap" -H "X-Tigris-Force-Delete: true"
[[ "$S3_STATUS" == 204 || "$S3_STATUS" == 200 ]] || fail "force delete (X-): HTTP $S3_STATUS $S3_BODY"
s3 HEAD "/$B"
check_status 404 "bucket gone"

stop_server
step "PASS"
