#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run by tests/e2e/agent_isolation.sh inside `tfork fork exec`: the AWS CLI with nothing but
# the agent's environment may write its own fork and is denied on the source and a sibling.
# Exit 0 only when all of that holds. Args: SOURCE SIBLING.
set -uo pipefail
src=$1 sibling=$2
# Debian's AWS CLI (2.9) predates AWS_ENDPOINT_URL, so the endpoint is passed from it; the
# credentials are whatever the CLI finds on its own.
aws() { timeout 120 /usr/bin/aws --endpoint-url "$AWS_ENDPOINT_URL" --no-cli-pager --cli-read-timeout 60 "$@"; }
echo "agent $TFORK_AGENT_INDEX in $TFORK_BUCKET as ${AWS_ACCESS_KEY_ID:0:8}..."
echo "written by the AWS CLI" >"${TMPDIR:-/tmp}/awscli-$TFORK_BUCKET.txt"
aws s3api put-object --bucket "$TFORK_BUCKET" --key awscli.txt \
  --body "${TMPDIR:-/tmp}/awscli-$TFORK_BUCKET.txt" >/dev/null || { echo "own fork: write failed"; exit 1; }
aws s3api list-objects-v2 --bucket "$TFORK_BUCKET" >/dev/null || { echo "own fork: list failed"; exit 1; }
for other in "$src" "$sibling"; do
  if aws s3api put-object --bucket "$other" --key awscli.txt \
    --body "${TMPDIR:-/tmp}/awscli-$TFORK_BUCKET.txt" >/dev/null 2>&1; then
    echo "LEAK: wrote into $other"
    exit 1
  fi
  out=$(aws s3api list-objects-v2 --bucket "$other" 2>&1) && { echo "LEAK: listed $other"; exit 1; }
  [[ "$out" == *AccessDenied* ]] || { echo "unexpected error on $other: $out"; exit 1; }
done
echo "isolated"
