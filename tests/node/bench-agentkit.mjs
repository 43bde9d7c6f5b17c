// SPDX-License-Identifier: Apache-2.0
// The baseline for `scripts/bench`: agent-kit's createForks / teardownForks algorithm
// (tigris-wire.md §5), run through the official @tigrisdata/storage and @tigrisdata/iam SDKs:
// one snapshot, then for each fork in turn create the fork and then its key; teardown deletes,
// for each fork in turn, its key and then the bucket (force). Prints one JSON line of timings.
//
// usage: node bench-agentkit.mjs SOURCE COUNT PREFIX   (endpoint and keys from AWS_* env)
import { createBucket, createBucketSnapshot, removeBucket } from '@tigrisdata/storage';
import { createAccessKey, removeAccessKey } from '@tigrisdata/iam';

const [source, countText, prefix] = process.argv.slice(2);
const count = Number(countText);
const config = {
  endpoint: process.env.AWS_ENDPOINT_URL,
  iamEndpoint: process.env.AWS_ENDPOINT_URL,
  accessKeyId: process.env.AWS_ACCESS_KEY_ID,
  secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY,
  forcePathStyle: true,
};

function must(result, what) {
  if (result.error) throw new Error(`${what}: ${result.error.message ?? result.error}`);
  return result.data;
}

const createStart = performance.now();
const { snapshotVersion } = must(await createBucketSnapshot(source, { config }), 'snapshot');
const forks = [];
for (let i = 0; i < count; i++) {
  const bucket = `${prefix}-${i}`;
  must(await createBucket(bucket, { sourceBucketName: source, sourceBucketSnapshot: snapshotVersion, config }),
       `fork ${bucket}`);
  const key = must(await createAccessKey(`${bucket}-key`, {
    bucketsRole: [{ bucket, role: 'Editor' }], config }), `key ${bucket}`);
  forks.push({ bucket, id: key.id });
}
const createMs = performance.now() - createStart;

const teardownStart = performance.now();
for (const fork of forks) {
  must(await removeAccessKey(fork.id, { config }), `remove key ${fork.bucket}`);
  must(await removeBucket(fork.bucket, { force: true, config }), `remove ${fork.bucket}`);
}
const teardownMs = performance.now() - teardownStart;

console.log(JSON.stringify({ forks: forks.length, create_ms: createMs, teardown_ms: teardownMs }));
