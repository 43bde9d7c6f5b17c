#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end: the Debian AWS CLI v2 (s3api and s3) against a real `tfork serve`.
# Covers bucket create/head/list/delete, object put/get/head/copy/delete with awkward keys,
# paginated and delimited listings, multipart upload through `aws s3 cp`, DeleteObjects and
# `aws s3 rb --force`. (The AWS CLI cannot send Tigris headers; the SDK tests cover those.)
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

require_aws_cli
start_server

B=awscli-main
B2=awscli-copy-target
OUT="$WORK/out"
mkdir -p "$OUT"

# count_keys BUCKET PREFIX: how many keys a full (auto-paginated) listing returns.
count_keys() {
  local out
  out=$(aws_cli s3api list-objects-v2 --bucket "$1" --prefix "$2" --output json)
  if [[ -z "$out" ]]; then echo 0; else json_get 'len(d.get("Contents") or [])' <<<"$out"; fi
}

# aws_err ARGS...: run a command that must fail; prints its stderr (exit status ignored).
aws_err() {
  if aws_cli "$@" >"$OUT/err.stdout" 2>"$OUT/err.stderr"; then
    fail "expected 'aws $*' to fail, but it succeeded: $(cat "$OUT/err.stdout")"
  fi
  cat "$OUT/err.stderr"
}

step "create-bucket returns Location /$B"
loc=$(aws_cli s3api create-bucket --bucket "$B" --query Location --output text)
check_eq "create-bucket Location" "/$B" "$loc"
aws_cli s3api head-bucket --bucket "$B"
aws_cli s3api create-bucket --bucket "$B2" >/dev/null

step "re-creating an owned bucket is a 409"
err=$(aws_err s3api create-bucket --bucket "$B")
[[ "$err" == *BucketAlreadyOwnedByYou* || "$err" == *BucketAlreadyExists* ]] ||
  fail "re-create: expected BucketAlreadyOwnedByYou/BucketAlreadyExists, got: $err"

step "list-buckets shows both buckets"
names=$(aws_cli s3api list-buckets --query 'Buckets[].Name' --output text)
check_contains "list-buckets" "$names" "$B"
check_contains "list-buckets" "$names" "$B2"

step "head-bucket on a missing bucket is 404"
err=$(aws_err s3api head-bucket --bucket awscli-missing)
check_contains "head-bucket missing" "$err" "404"

# --- objects with awkward keys ---------------------------------------------------------
KEYS=(
  "plain.txt"
  "dir one/file with spaces.txt"
  "plus+sign+key.txt"
  "eq=amp&semi;comma,.txt"
  "percent%20literal%.txt"
  "unicode/héllo wörld 日本語 ✓.txt"
  "nested/a/b/c/d/e.txt"
  "tilde~star*quote'paren(1)!.txt"
  "trailing-slash-dir/"
)
i=0
for key in "${KEYS[@]}"; do
  i=$((i + 1))
  f="$OUT/body.$i"
  printf 'object %d: %s\n' "$i" "$key" >"$f"
  head -c $((i * 97)) /dev/urandom >>"$f"
  step "put/get/head [$key]"
  etag=$(aws_cli s3api put-object --bucket "$B" --key "$key" --body "$f" \
    --content-type "text/x-test-$i" --metadata "idx=$i,kind=awkward" --query ETag --output text)
  check_eq "put ETag [$key]" "\"$(md5_of "$f")\"" "$etag"
  aws_cli s3api get-object --bucket "$B" --key "$key" "$OUT/got.$i" >"$OUT/get.$i.json"
  check_eq "get body sha256 [$key]" "$(sha256_of "$f")" "$(sha256_of "$OUT/got.$i")"
  check_eq "get ETag [$key]" "\"$(md5_of "$f")\"" "$(json_get 'd["ETag"]' <"$OUT/get.$i.json")"
  head_json=$(aws_cli s3api head-object --bucket "$B" --key "$key")
  check_eq "head ContentLength [$key]" "$(stat -c %s "$f")" "$(json_get 'd["ContentLength"]' <<<"$head_json")"
  check_eq "head ContentType [$key]" "text/x-test-$i" "$(json_get 'd["ContentType"]' <<<"$head_json")"
  check_eq "head metadata [$key]" "$i/awkward" \
    "$(json_get 'd["Metadata"]["idx"] + "/" + d["Metadata"]["kind"]' <<<"$head_json")"
done

step "list-objects-v2 returns every awkward key exactly, in UTF-8 binary order"
/usr/bin/python3 - "${KEYS[@]}" >"$OUT/expected_keys" <<'PY'
import sys
for k in sorted(sys.argv[1:], key=lambda s: s.encode()):
    print(k)
PY
aws_cli s3api list-objects-v2 --bucket "$B" --output json >"$OUT/list_all.json"
json_get '"\n".join(o["Key"] for o in d["Contents"])' <"$OUT/list_all.json" >"$OUT/listed_keys"
diff -u "$OUT/expected_keys" "$OUT/listed_keys" >&2 || fail "listed keys differ from the keys put"
step "list-objects (v1) returns the same keys"
aws_cli s3api list-objects --bucket "$B" --output json |
  json_get '"\n".join(o["Key"] for o in d["Contents"])' >"$OUT/listed_keys_v1"
diff -u "$OUT/expected_keys" "$OUT/listed_keys_v1" >&2 || fail "v1 listed keys differ"

step "range GET"
aws_cli s3api get-object --bucket "$B" --key plain.txt --range bytes=0-5 "$OUT/range" >"$OUT/range.json"
check_eq "range body" "object" "$(cat "$OUT/range")"
check_contains "ContentRange" "$(json_get 'd.get("ContentRange","")' <"$OUT/range.json")" "bytes 0-5/"

step "get-object of a missing key is NoSuchKey"
err=$(aws_err s3api get-object --bucket "$B" --key "no such key" "$OUT/nothing")
check_contains "missing key" "$err" "NoSuchKey"

# --- pagination --------------------------------------------------------------------------
step "30 keys under page/ (aws s3 cp --recursive)"
mkdir -p "$OUT/page"
for n in $(seq -w 1 30); do printf 'page %s\n' "$n" >"$OUT/page/item-$n.txt"; done
aws_cli s3 cp "$OUT/page" "s3://$B/page/" --recursive --only-show-errors
seq -w 1 30 | sed 's|^|page/item-|; s|$|.txt|' >"$OUT/page_expected"

step "list-objects-v2 auto-paginates with --page-size 7"
aws_cli s3api list-objects-v2 --bucket "$B" --prefix page/ --page-size 7 \
  --query 'Contents[].Key' --output json | json_get '"\n".join(d)' >"$OUT/page_auto"
diff -u "$OUT/page_expected" "$OUT/page_auto" >&2 || fail "page-size 7 listing differs"

step "--max-items 10 --page-size 7 hands out NextToken until the end"
token=""
: >"$OUT/page_manual"
for round in 1 2 3 4; do
  args=(s3api list-objects-v2 --bucket "$B" --prefix page/ --page-size 7 --max-items 10 --output json)
  [[ -n "$token" ]] && args+=(--starting-token "$token")
  aws_cli "${args[@]}" >"$OUT/page_round.json"
  json_get '"\n".join(o["Key"] for o in d.get("Contents", []))' <"$OUT/page_round.json" >>"$OUT/page_manual"
  token=$(json_get 'd.get("NextToken", "")' <"$OUT/page_round.json")
  [[ -z "$token" ]] && break
done
check_eq "pages needed for 30 keys at max-items 10" 3 "$round"
diff -u "$OUT/page_expected" "$OUT/page_manual" >&2 || fail "max-items listing differs"

step "one raw page: --max-keys 7 --no-paginate"
aws_cli s3api list-objects-v2 --bucket "$B" --prefix page/ --max-keys 7 --no-paginate --output json >"$OUT/raw1.json"
check_eq "KeyCount" 7 "$(json_get 'd["KeyCount"]' <"$OUT/raw1.json")"
check_eq "MaxKeys" 7 "$(json_get 'd["MaxKeys"]' <"$OUT/raw1.json")"
check_eq "IsTruncated" true "$(json_get 'd["IsTruncated"]' <"$OUT/raw1.json")"
ct=$(json_get 'd["NextContinuationToken"]' <"$OUT/raw1.json")
[[ -n "$ct" ]] || fail "no NextContinuationToken on a truncated page"
aws_cli s3api list-objects-v2 --bucket "$B" --prefix page/ --max-keys 100 --no-paginate \
  --continuation-token "$ct" --output json >"$OUT/raw2.json"
check_eq "second page KeyCount" 23 "$(json_get 'd["KeyCount"]' <"$OUT/raw2.json")"
check_eq "second page IsTruncated" false "$(json_get 'd["IsTruncated"]' <"$OUT/raw2.json")"
check_eq "second page first key" "page/item-08.txt" "$(json_get 'd["Contents"][0]["Key"]' <"$OUT/raw2.json")"
check_eq "second page has no NextContinuationToken" "" "$(json_get 'd.get("NextContinuationToken","")' <"$OUT/raw2.json")"
check_eq "ContinuationToken echoed" "$ct" "$(json_get 'd.get("ContinuationToken","")' <"$OUT/raw2.json")"

step "start-after"
first=$(aws_cli s3api list-objects-v2 --bucket "$B" --prefix page/ --start-after page/item-28.txt \
  --query 'Contents[].Key' --output text)
check_eq "start-after" "page/item-29.txt	page/item-30.txt" "$first"

step "list-objects (v1) paginates with Marker (--page-size 7)"
aws_cli s3api list-objects --bucket "$B" --prefix page/ --page-size 7 \
  --query 'Contents[].Key' --output json | json_get '"\n".join(d)' >"$OUT/page_v1"
diff -u "$OUT/page_expected" "$OUT/page_v1" >&2 || fail "v1 page-size 7 listing differs"

# --- delimiter and prefix -----------------------------------------------------------------
step "delimiter / prefix"
for k in tree/a.txt tree/b/1.txt tree/b/2.txt tree/c/3.txt tree/c/d/4.txt treetop.txt; do
  printf '%s' "$k" | aws_cli s3 cp - "s3://$B/$k" --only-show-errors
done
aws_cli s3api list-objects-v2 --bucket "$B" --prefix tree/ --delimiter / --no-paginate --output json >"$OUT/tree.json"
check_eq "delimited Contents" '["tree/a.txt"]' "$(json_get '[o["Key"] for o in d["Contents"]]' <"$OUT/tree.json")"
check_eq "delimited CommonPrefixes" '["tree/b/", "tree/c/"]' \
  "$(json_get '[p["Prefix"] for p in d["CommonPrefixes"]]' <"$OUT/tree.json")"
check_eq "delimited KeyCount" 3 "$(json_get 'd["KeyCount"]' <"$OUT/tree.json")"
check_eq "Delimiter echoed" "/" "$(json_get 'd["Delimiter"]' <"$OUT/tree.json")"
check_eq "Prefix echoed" "tree/" "$(json_get 'd["Prefix"]' <"$OUT/tree.json")"
step "delimiter with a page size of 1 counts common prefixes as results"
aws_cli s3api list-objects-v2 --bucket "$B" --prefix tree/ --delimiter / --page-size 1 --output json >"$OUT/tree1.json"
check_eq "paged delimited Contents" '["tree/a.txt"]' "$(json_get '[o["Key"] for o in d["Contents"]]' <"$OUT/tree1.json")"
check_eq "paged delimited CommonPrefixes" '["tree/b/", "tree/c/"]' \
  "$(json_get '[p["Prefix"] for p in d["CommonPrefixes"]]' <"$OUT/tree1.json")"
step "aws s3 ls shows PRE lines"
ls_out=$(aws_cli s3 ls "s3://$B/tree/")
check_contains "s3 ls" "$ls_out" "PRE b/"
check_contains "s3 ls" "$ls_out" "PRE c/"
check_contains "s3 ls" "$ls_out" "a.txt"
top=$(aws_cli s3api list-objects-v2 --bucket "$B" --delimiter / --query 'CommonPrefixes[].Prefix' --output text)
check_contains "top-level prefixes" "$top" "tree/"
check_contains "top-level prefixes" "$top" "unicode/"
check_not_contains "top-level prefixes" "$top" "treetop"

# --- multipart --------------------------------------------------------------------------
step "aws s3 cp of a 20 MB file goes multipart (threshold and part size 5 MB)"
head -c $((20 * 1024 * 1024 + 12345)) /dev/urandom >"$OUT/big.bin"
aws_cli s3 cp "$OUT/big.bin" "s3://$B/big/blob.bin" --only-show-errors
etag=$(aws_cli s3api head-object --bucket "$B" --key big/blob.bin --query ETag --output text)
[[ "$etag" =~ ^\"[0-9a-f]{32}-5\"$ ]] || fail "multipart ETag should end in -5, got $etag"
check_eq "multipart ETag value" "$(multipart_etag "$OUT/big.bin" $((5 * 1024 * 1024)))" "$etag"
check_eq "multipart size" "$(stat -c %s "$OUT/big.bin")" \
  "$(aws_cli s3api head-object --bucket "$B" --key big/blob.bin --query ContentLength --output text)"
aws_cli s3 cp "s3://$B/big/blob.bin" "$OUT/big.back" --only-show-errors
check_eq "multipart round trip sha256" "$(sha256_of "$OUT/big.bin")" "$(sha256_of "$OUT/big.back")"
step "ranged read inside the third part"
aws_cli s3api get-object --bucket "$B" --key big/blob.bin --range bytes=10485750-10485779 "$OUT/mid" >/dev/null
check_eq "mid-range bytes" "$(tail -c +10485751 "$OUT/big.bin" | head -c 30 | sha256sum | cut -d' ' -f1)" "$(sha256_of "$OUT/mid")"

step "s3api multipart by hand: list-parts, list-multipart-uploads, abort, NoSuchUpload"
upload=$(aws_cli s3api create-multipart-upload --bucket "$B" --key "mp/aborted key" --query UploadId --output text)
head -c $((5 * 1024 * 1024)) /dev/urandom >"$OUT/part1"
aws_cli s3api upload-part --bucket "$B" --key "mp/aborted key" --upload-id "$upload" --part-number 1 --body "$OUT/part1" >/dev/null
check_eq "list-parts" 1 "$(aws_cli s3api list-parts --bucket "$B" --key "mp/aborted key" --upload-id "$upload" --query 'length(Parts)' --output text)"
check_eq "list-multipart-uploads" "$upload" "$(aws_cli s3api list-multipart-uploads --bucket "$B" --prefix "mp/" --query 'Uploads[0].UploadId' --output text)"
aws_cli s3api abort-multipart-upload --bucket "$B" --key "mp/aborted key" --upload-id "$upload"
err=$(aws_err s3api list-parts --bucket "$B" --key "mp/aborted key" --upload-id "$upload")
check_contains "list-parts after abort" "$err" "NoSuchUpload"
err=$(aws_err s3api head-object --bucket "$B" --key "mp/aborted key")
check_contains "aborted upload leaves no object" "$err" "404"

step "s3api multipart by hand: complete with two parts"
upload=$(aws_cli s3api create-multipart-upload --bucket "$B" --key "mp/done+ü" --query UploadId --output text)
printf 'tail part' >"$OUT/part2"
e1=$(aws_cli s3api upload-part --bucket "$B" --key "mp/done+ü" --upload-id "$upload" --part-number 1 --body "$OUT/part1" --query ETag --output text)
e2=$(aws_cli s3api upload-part --bucket "$B" --key "mp/done+ü" --upload-id "$upload" --part-number 2 --body "$OUT/part2" --query ETag --output text)
check_eq "part 1 ETag" "\"$(md5_of "$OUT/part1")\"" "$e1"
/usr/bin/python3 - "$e1" "$e2" >"$OUT/parts.json" <<'PY'
import json, sys
print(json.dumps({"Parts": [{"PartNumber": 1, "ETag": sys.argv[1]}, {"PartNumber": 2, "ETag": sys.argv[2]}]}))
PY
etag=$(aws_cli s3api complete-multipart-upload --bucket "$B" --key "mp/done+ü" --upload-id "$upload" \
  --multipart-upload "file://$OUT/parts.json" --query ETag --output text)
cat "$OUT/part1" "$OUT/part2" >"$OUT/mp.expected"
check_eq "completed ETag" "$(multipart_etag "$OUT/mp.expected" $((5 * 1024 * 1024)))" "$etag"
aws_cli s3api get-object --bucket "$B" --key "mp/done+ü" "$OUT/mp.got" >/dev/null
check_eq "completed body" "$(sha256_of "$OUT/mp.expected")" "$(sha256_of "$OUT/mp.got")"

# --- copy ---------------------------------------------------------------------------------
step "copy-object within a bucket and across buckets (keys with spaces and unicode)"
src_key="dir one/file with spaces.txt"
aws_cli s3api copy-object --bucket "$B" --key "copies/same bucket ✓.txt" --copy-source "$B/$src_key" >"$OUT/copy1.json"
check_eq "copy ETag" "\"$(md5_of "$OUT/body.2")\"" "$(json_get 'd["CopyObjectResult"]["ETag"]' <"$OUT/copy1.json")"
aws_cli s3api get-object --bucket "$B" --key "copies/same bucket ✓.txt" "$OUT/copy1.got" >/dev/null
check_eq "copied body" "$(sha256_of "$OUT/body.2")" "$(sha256_of "$OUT/copy1.got")"
aws_cli s3api copy-object --bucket "$B2" --key "from-main/unicode copy.txt" \
  --copy-source "$B/unicode/héllo wörld 日本語 ✓.txt" >/dev/null
aws_cli s3api get-object --bucket "$B2" --key "from-main/unicode copy.txt" "$OUT/copy2.got" >/dev/null
check_eq "cross-bucket copied body" "$(sha256_of "$OUT/body.6")" "$(sha256_of "$OUT/copy2.got")"
step "copy keeps metadata by default and replaces it with --metadata-directive REPLACE"
check_eq "copied metadata" "6" "$(aws_cli s3api head-object --bucket "$B2" --key "from-main/unicode copy.txt" --query Metadata.idx --output text)"
aws_cli s3api copy-object --bucket "$B" --key copies/replaced.txt --copy-source "$B/plain.txt" \
  --metadata-directive REPLACE --metadata fresh=yes --content-type application/x-fresh >/dev/null
h=$(aws_cli s3api head-object --bucket "$B" --key copies/replaced.txt --output json)
check_eq "replaced metadata" '{"fresh": "yes"}' "$(json_get 'd["Metadata"]' <<<"$h")"
check_eq "replaced content type" "application/x-fresh" "$(json_get 'd["ContentType"]' <<<"$h")"
step "aws s3 cp s3->s3 copy"
aws_cli s3 cp "s3://$B/big/blob.bin" "s3://$B2/big copy.bin" --only-show-errors
check_eq "s3 cp s3->s3 size" "$(stat -c %s "$OUT/big.bin")" \
  "$(aws_cli s3api head-object --bucket "$B2" --key "big copy.bin" --query ContentLength --output text)"
err=$(aws_err s3api copy-object --bucket "$B" --key x --copy-source "$B/does not exist")
check_contains "copy of a missing source" "$err" "NoSuchKey"

# --- deletes ------------------------------------------------------------------------------
step "delete-objects (batch): existing and missing keys are all reported Deleted"
/usr/bin/python3 - >"$OUT/delete.json" <<'PY'
import json
keys = ["page/item-%02d.txt" % n for n in range(1, 11)] + ["plus+sign+key.txt", "percent%20literal%.txt", "never existed.txt"]
print(json.dumps({"Objects": [{"Key": k} for k in keys], "Quiet": False}))
PY
aws_cli s3api delete-objects --bucket "$B" --delete "file://$OUT/delete.json" --output json >"$OUT/deleted.json"
check_eq "Deleted count" 13 "$(json_get 'len(d.get("Deleted", []))' <"$OUT/deleted.json")"
check_eq "no Errors" 0 "$(json_get 'len(d.get("Errors", []))' <"$OUT/deleted.json")"
check_contains "Deleted keys" "$(json_get '[o["Key"] for o in d["Deleted"]]' <"$OUT/deleted.json")" '"percent%20literal%.txt"'
check_eq "page/ after batch delete" 20 \
  "$(count_keys "$B" page/)"
err=$(aws_err s3api head-object --bucket "$B" --key "plus+sign+key.txt")
check_contains "deleted key is gone" "$err" "404"
step "delete-objects quiet mode returns no Deleted entries"
/usr/bin/python3 - >"$OUT/delete_quiet.json" <<'PY'
import json
print(json.dumps({"Objects": [{"Key": "page/item-%02d.txt" % n} for n in range(11, 21)], "Quiet": True}))
PY
aws_cli s3api delete-objects --bucket "$B" --delete "file://$OUT/delete_quiet.json" --output json >"$OUT/deleted_quiet.json"
# (The AWS CLI prints nothing at all for an empty result.)
[[ ! -s "$OUT/deleted_quiet.json" ]] ||
  check_eq "quiet Deleted" 0 "$(json_get 'len(d.get("Deleted", []))' <"$OUT/deleted_quiet.json")"
check_eq "page/ after quiet delete" 10 \
  "$(count_keys "$B" page/)"

step "delete-object, then delete it again (idempotent 204)"
aws_cli s3api delete-object --bucket "$B" --key "nested/a/b/c/d/e.txt"
aws_cli s3api delete-object --bucket "$B" --key "nested/a/b/c/d/e.txt"
err=$(aws_err s3api head-object --bucket "$B" --key "nested/a/b/c/d/e.txt")
check_contains "deleted object head" "$err" "404"

step "aws s3 rm --recursive on a prefix"
aws_cli s3 rm "s3://$B/tree/" --recursive --only-show-errors
check_eq "tree/ after rm" 0 "$(count_keys "$B" tree/)"
check_eq "treetop survives" 1 "$(count_keys "$B" treetop)"

step "aws s3 sync uploads a directory and is a no-op the second time"
mkdir -p "$OUT/sync/sub dir"
for n in 1 2 3; do printf 'sync %s' "$n" >"$OUT/sync/sub dir/f$n.txt"; done
# Older than anything the server will stamp, so the second sync has nothing to do.
touch -d '2 hours ago' "$OUT/sync/sub dir/"*.txt
aws_cli s3 sync "$OUT/sync" "s3://$B2/sync/" --only-show-errors
check_eq "synced count" 3 "$(count_keys "$B2" sync/)"
again=$(aws_cli s3 sync "$OUT/sync" "s3://$B2/sync/" --no-progress)
check_eq "second sync uploads nothing" "" "$again"

# --- bucket deletion ---------------------------------------------------------------------------
step "delete-bucket on a non-empty bucket is BucketNotEmpty"
err=$(aws_err s3api delete-bucket --bucket "$B")
check_contains "delete non-empty" "$err" "BucketNotEmpty"

step "aws s3 rb --force empties and removes both buckets"
aws_cli s3 rb "s3://$B" --force >/dev/null
aws_cli s3 rb "s3://$B2" --force >/dev/null
err=$(aws_err s3api head-bucket --bucket "$B")
check_contains "removed bucket head" "$err" "404"
names=$(aws_cli s3api list-buckets --query 'Buckets[].Name' --output text)
check_not_contains "list-buckets after rb" "$names" "$B"

step "aws s3 mb (sends LocationConstraint auto) and rb of an empty bucket"
aws_cli s3 mb s3://awscli-made-by-mb >/dev/null
aws_cli s3api head-bucket --bucket awscli-made-by-mb
aws_cli s3 rb s3://awscli-made-by-mb >/dev/null
err=$(aws_err s3api head-bucket --bucket awscli-made-by-mb)
check_contains "mb/rb bucket gone" "$err" "404"

step "invalid bucket name is rejected"
err=$(aws_err s3api create-bucket --bucket "Bad_Bucket_Name")
check_contains "invalid name" "$err" "InvalidBucketName"

stop_server
step "PASS"
