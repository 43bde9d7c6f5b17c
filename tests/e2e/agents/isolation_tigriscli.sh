#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run by tests/e2e/agent_isolation.sh inside `tfork fork exec`: the official Tigris CLI
# (@tigrisdata/cli) with nothing but the agent's environment. The CLI takes AWS_PROFILE (when
# ~/.aws holds a profile file) first, then AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY with the
# endpoint AWS_ENDPOINT_URL_S3, then TIGRIS_STORAGE_*, then ~/.tigris/config.json: the
# operator's root keys sit in every one of those outside the agent. Inside, it may write and
# list its own fork and is denied on the source and on a sibling, presigned URLs included.
# Exit 0 only when all of that holds. Args: TIGRIS_CLI_JS SOURCE SIBLING.
set -uo pipefail
cli=$1 src=$2 sibling=$3
export NODE_NO_WARNINGS=1
tigris() { timeout 120 node "$cli" "$@" </dev/null; }
echo "agent $TFORK_AGENT_INDEX in $TFORK_BUCKET as ${AWS_ACCESS_KEY_ID:0:8}..."
file="${TMPDIR:-/tmp}/tigriscli-$TFORK_BUCKET.txt"
echo "written by the Tigris CLI" >"$file"
tigris cp "$file" "t3://$TFORK_BUCKET/tigriscli.txt" >/dev/null || { echo "own fork: cp failed"; exit 1; }
listing=$(tigris ls "t3://$TFORK_BUCKET" --format json) || { echo "own fork: ls failed"; exit 1; }
[[ "$listing" == *tigriscli.txt* ]] || { echo "own fork: ls does not show tigriscli.txt: $listing"; exit 1; }
url=$(tigris presign "t3://$TFORK_BUCKET/tigriscli.txt") || { echo "own fork: presign failed"; exit 1; }
[[ "$url" == *"X-Amz-Credential=${AWS_ACCESS_KEY_ID}"* ]] || { echo "own fork: presigned with another key: $url"; exit 1; }
for other in "$src" "$sibling"; do
  if tigris cp "$file" "t3://$other/tigriscli.txt" >/dev/null 2>&1; then
    echo "LEAK: wrote into $other"
    exit 1
  fi
  out=$(tigris ls "t3://$other" 2>&1) && { echo "LEAK: listed $other"; exit 1; }
  [[ "$out" == *"Access Denied"* ]] || { echo "unexpected error on $other: $out"; exit 1; }
  out=$(tigris presign "t3://$other/data.txt" 2>&1) && { echo "LEAK: presigned $other: $out"; exit 1; }
  [[ "$out" == *"may not read bucket $other"* ]] || { echo "unexpected presign error on $other: $out"; exit 1; }
done
echo "isolated"
