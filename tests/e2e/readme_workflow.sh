#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end (issue 7 §2): the README's workflow, pasted into one shell, works against a real
# `tfork serve` and leaves that shell with the operator's own credentials. The blocks are read
# from README.md itself (the "## The workflow" block, with the subshell `fork env` block run
# before its teardown line), so the test fails when the README stops being true.
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

require_cmd python3
require_aws_cli
start_server

dir="$WORK/readme"
mkdir -p "$dir/bin" "$dir/data"
cd "$dir"
ln -s "$TFORK" bin/tfork
# The `aws` the README's lines run is Debian 12's (2.9), which reads no AWS_ENDPOINT_URL: the
# lines must say where the endpoint is (issue 21 §4).
ln -s "$AWS_BIN" bin/aws
echo "seed data" >data/seed.txt

# The agent the README runs: writes result-<index>.txt into its own fork (curl's SigV4, so the
# test does not wait for eight Python start-ups).
cat >agent.sh <<'SH'
#!/usr/bin/env bash
set -euo pipefail
printf 'agent %s was here\n' "$TFORK_AGENT_INDEX" |
  curl -sS --fail --aws-sigv4 "aws:amz:auto:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -T - \
    "$AWS_ENDPOINT_URL/$TFORK_BUCKET/result-$TFORK_AGENT_INDEX.txt"
SH
chmod +x agent.sh

step "the README's workflow, as one script"
python3 - "$SOURCE_DIR/README.md" >workflow.sh <<'PY' || fail "README.md: the workflow blocks are not where this test looks"
import re, sys
text = open(sys.argv[1]).read()
blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
workflow = next(b for b in blocks if "tfork fork create" in b and "tfork teardown" in b)
by_hand = next(b for b in blocks if "tfork fork env" in b)
lines = workflow.splitlines(keepends=True)
at = next(i for i, line in enumerate(lines) if line.startswith("tfork teardown"))
print("set -euo pipefail")
print("".join(lines[:at]) + by_hand + "".join(lines[at:]), end="")
print('printf "%s\\n" "$AWS_ACCESS_KEY_ID" "${TIGRIS_STORAGE_ACCESS_KEY_ID:-}" >after.txt')
PY
check_contains "the workflow" "$(cat workflow.sh)" "tfork fork exec --manifest run-42.json -- ./agent.sh"

expect_rc "the README's workflow" 0 env PATH="$dir/bin:$PATH" bash workflow.sh
check_contains "the subshell's listing of run-42-3" "$(cat "$OUT/stdout")" "result-3.txt"
check_eq "the shell's credentials afterwards" "$ROOT_AK" "$(head -1 after.txt)"
check_eq "the shell's TIGRIS_STORAGE key afterwards" "${TIGRIS_STORAGE_ACCESS_KEY_ID:-}" \
  "$(sed -n 2p after.txt)"

step "what the workflow left: agent 3's work merged, run-42 gone, run-43 kept"
s3 GET /training-data/result-3.txt
check_status 200
check_eq "merged into the source" "agent 3 was here" "$S3_BODY"
s3 GET /training-data/result-2.txt
check_status 404
check_eq "run-42 buckets left" "" "$(buckets_named 'run-42-*')"
check_eq "run-42 keys left" "" "$(keys_named 'run-42-*')"
check_eq "run-43 kept (every agent exited 0)" 8 "$(buckets_named 'run-43-*' | wc -l)"
expect_rc "teardown run-43" 0 "$TFORK" teardown --manifest run-43.manifest.json -q
check_eq "run-43 keys left" "" "$(keys_named 'run-43-*')"
