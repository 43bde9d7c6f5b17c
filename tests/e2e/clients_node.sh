#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# End-to-end: the npm clients locked in tests/node (AWS SDK v3 @aws-sdk/client-s3,
# @tigrisdata/storage, @tigrisdata/iam) against a real `tfork serve`.
#   tests/node/s3_client.mjs   aws-chunked streaming uploads with trailer checksums, CRC32
#                              puts, DeleteObjects without Content-MD5, paginated listing,
#                              multipart by hand
#   tests/node/tigris_sdk.mjs  snapshots, forks, getBucketInfo/listForks, scoped keys
#                              (Editor/ReadOnly) enforced on fork, source and sibling,
#                              fork isolation, removeAccessKey, removeBucket {force}
#   tests/node/merge_rebase.mjs mergeFork and rebaseFork: what lands, what a sibling sees
source "$(dirname "${BASH_SOURCE[0]}")/clients_lib.sh"

ensure_node
start_server
export AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE=1 NODE_NO_WARNINGS=1

# Every script runs (on separate buckets), so one failure does not hide the other.
failed=()
step "tests/node/s3_client.mjs"
run_node s3_client.mjs node-s3 || failed+=(s3_client.mjs)
step "tests/node/tigris_sdk.mjs"
run_node tigris_sdk.mjs node-tg || failed+=(tigris_sdk.mjs)
step "tests/node/merge_rebase.mjs"
run_node merge_rebase.mjs node-mr || failed+=(merge_rebase.mjs)
((${#failed[@]} == 0)) || fail "failed: ${failed[*]} (see the FAIL lines above)"

step "the server still answers and stops cleanly"
s3 GET /
check_status 200 "ListBuckets after the SDK runs"
stop_server
step "PASS"
