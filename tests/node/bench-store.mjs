// SPDX-License-Identifier: Apache-2.0
// Store benchmarks for `scripts/bench` (issue: fork/snapshot creation at 10 vs N objects,
// a 1000-key ListObjectsV2 page through a three-level fork chain, small PUTs per second),
// measured from a real client (@aws-sdk/client-s3 and @tigrisdata/storage) against a running
// `tfork serve`. Prints one JSON document of timings.
//
// usage: node bench-store.mjs OBJECTS   (endpoint and root keys from AWS_* env)
//        node bench-store.mjs load BUCKET COUNT   (only: a snapshot-enabled BUCKET holding
//        COUNT objects data/0000000.txt..., 64 PUTs in flight; for the merge/diff bench)
import { S3Client, PutObjectCommand, ListObjectsV2Command, DeleteObjectCommand } from '@aws-sdk/client-s3';
import { createBucket, createBucketSnapshot } from '@tigrisdata/storage';

const objects = process.argv[2] === 'load' ? 0 : Number(process.argv[2] ?? 100000);
const endpoint = process.env.AWS_ENDPOINT_URL;
const config = {
  endpoint, iamEndpoint: endpoint, forcePathStyle: true,
  accessKeyId: process.env.AWS_ACCESS_KEY_ID, secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY,
};
const s3 = new S3Client({
  endpoint, region: 'auto', forcePathStyle: true,
  credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey },
});

const must = (result, what) => {
  if (result.error) throw new Error(`${what}: ${result.error.message ?? result.error}`);
  return result.data;
};
const stats = (samples) => {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { n: sorted.length, median_ms: at(0.5), p99_ms: at(0.99), max_ms: sorted[sorted.length - 1] };
};
async function timed(fn) { const t = performance.now(); await fn(); return performance.now() - t; }
async function pool(total, concurrency, task) {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < total) { const i = next++; await task(i); }
  }));
}
const key = (i) => `data/${String(i).padStart(7, '0')}.txt`;

async function load(bucket, count) {
  must(await createBucket(bucket, { enableSnapshot: true, config }), `create ${bucket}`);
  await pool(count, 64, (i) => s3.send(new PutObjectCommand({ Bucket: bucket, Key: key(i), Body: `object ${i}\n` })));
}

// Snapshot and fork creation: each request timed alone, at 10 and at N objects.
async function forkAndSnapshotTimes(bucket, rounds) {
  const snapshot = [], fork = [];
  for (let r = 0; r < rounds; r++) {
    let version;
    snapshot.push(await timed(async () => {
      version = must(await createBucketSnapshot(bucket, { config }), 'snapshot').snapshotVersion;
    }));
    fork.push(await timed(async () => {
      must(await createBucket(`${bucket}-f${r}`, { sourceBucketName: bucket, sourceBucketSnapshot: version, config }), 'fork');
    }));
  }
  return { snapshot: stats(snapshot), fork: stats(fork) };
}

if (process.argv[2] === 'load') {
  const [bucket, count] = [process.argv[3], Number(process.argv[4])];
  const start = performance.now();
  await load(bucket, count);
  console.log(JSON.stringify({ bucket, objects: count, load_puts_per_s: count / ((performance.now() - start) / 1000) }));
  process.exit(0);
}

const result = { objects };
const loadStart = performance.now();
await load('bench-small', 10);
await load('bench-big', objects);
result.load_puts_per_s = (objects + 10) / ((performance.now() - loadStart) / 1000);

const rounds = 25;
result.small = await forkAndSnapshotTimes('bench-small', rounds);
result.big = await forkAndSnapshotTimes('bench-big', rounds);

// A three-level chain: big -> l1 (1% overwritten, 1% deleted) -> l2 (more writes) -> l3.
const snap = must(await createBucketSnapshot('bench-big', { config }), 'snapshot').snapshotVersion;
must(await createBucket('bench-l1', { sourceBucketName: 'bench-big', sourceBucketSnapshot: snap, config }), 'l1');
const step = 100;
await pool(Math.floor(objects / step), 32, async (j) => {
  const i = j * step;
  await s3.send(new PutObjectCommand({ Bucket: 'bench-l1', Key: key(i), Body: `changed ${i}\n` }));
  await s3.send(new DeleteObjectCommand({ Bucket: 'bench-l1', Key: key(i + 1) }));
});
must(await createBucket('bench-l2', { sourceBucketName: 'bench-l1', config }), 'l2');
await pool(Math.floor(objects / step), 32, (j) =>
  s3.send(new PutObjectCommand({ Bucket: 'bench-l2', Key: key(j * step + 2), Body: 'l2\n' })));
must(await createBucket('bench-l3', { sourceBucketName: 'bench-l2', config }), 'l3');
const pages = [];
for (let r = 0; r < 40; r++) {
  const start = Math.floor((r / 40) * (objects - 2000));
  let count = 0;
  pages.push(await timed(async () => {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: 'bench-l3', MaxKeys: 1000, StartAfter: key(start) }));
    count = page.KeyCount;
  }));
  if (count !== 1000) throw new Error(`page ${r} had ${count} keys`);
}
result.list_page_3_levels = stats(pages);

// Small PUTs: 4 KiB bodies, 32 in flight, for a fixed count.
must(await createBucket('bench-puts', { config }), 'puts');
const body = 'x'.repeat(4096), puts = 5000;
const putMs = await timed(() => pool(puts, 32, (i) =>
  s3.send(new PutObjectCommand({ Bucket: 'bench-puts', Key: `p/${i}`, Body: body }))));
result.small_puts_per_s = puts / (putMs / 1000);

console.log(JSON.stringify(result, null, 2));
