// SPDX-License-Identifier: Apache-2.0
// The official Tigris SDKs (@tigrisdata/storage, @tigrisdata/iam) against `tfork serve`:
// snapshot-enabled bucket, a snapshot whose name has spaces, listBucketSnapshots, forks
// from that snapshot, getBucketInfo fork info, listForks, reads at a snapshot version,
// scoped keys (createAccessKey with bucketsRole) enforced on the fork, its source and a
// sibling, fork isolation, removeAccessKey, removeBucket {force}.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import {
  createBucket,
  createBucketSnapshot,
  deleteBucketSnapshot,
  get,
  getBucketInfo,
  head,
  list,
  listBucketSnapshots,
  listBuckets,
  listForks,
  put,
  remove,
  removeBucket,
} from '@tigrisdata/storage';
import { createAccessKey, getAccessKey, listAccessKeys, removeAccessKey } from '@tigrisdata/iam';
import { bad, main, ok, rejects, s3Client, step, tigrisConfig } from './e2e_lib.mjs';

const P = process.argv[2] ?? 'node-tg';
const SRC = `${P}-src`;
const FA = `${P}-fork-a`;
const FB = `${P}-fork-b`;
const SNAP_NAME = 'before the agents run';

const cfg = tigrisConfig();
const inBucket = (bucket, creds) => ({ config: tigrisConfig(creds, bucket) });

async function names(bucket, opts = {}, creds) {
  const out = [];
  let paginationToken;
  do {
    const page = ok(`list ${bucket}`, await list({ ...opts, paginationToken, ...inBucket(bucket, creds) }));
    out.push(...page.items.map((i) => i.name));
    paginationToken = page.hasMore ? page.paginationToken : undefined;
  } while (paginationToken);
  return out.sort();
}

const text = async (bucket, key, opts = {}, creds) =>
  ok(`get ${bucket}/${key}`, await get(key, 'string', { ...opts, ...inBucket(bucket, creds) }));

await main(async () => {
  step('createBucket with enableSnapshot');
  const made = ok('createBucket src', await createBucket(SRC, { enableSnapshot: true, config: cfg }));
  assert.equal(made.isSnapshotEnabled, true);
  let info = ok('getBucketInfo src', await getBucketInfo(SRC, { config: cfg }));
  assert.equal(info.isSnapshotEnabled, true, 'getBucketInfo: snapshot-enabled source');
  assert.equal(info.forkInfo?.parents?.length ?? 0, 0, 'a new bucket has no fork parents');
  const fresh = ok('listBucketSnapshots (new bucket)', await listBucketSnapshots(SRC, { config: cfg }));
  assert.deepEqual(fresh.snapshots, [], 'a new snapshot-enabled bucket has no snapshots');

  step('put the dataset (SDK put: lib-storage Upload, x-amz-acl private)');
  for (const [k, v] of [['data/a.txt', 'a v1'], ['data/b.txt', 'b v1'], ['data/c.txt', 'c v1'], ['readme.md', 'hello']]) {
    const r = ok(`put ${k}`, await put(k, v, inBucket(SRC)));
    assert.equal(r.size, v.length);
  }

  step(`createBucketSnapshot named "${SNAP_NAME}"`);
  const { snapshotVersion: v1 } = ok('createBucketSnapshot', await createBucketSnapshot(SRC, { name: SNAP_NAME, config: cfg }));
  assert.match(v1, /^\d{16,20}$/, `snapshot version ${v1}`);

  step('change the source after the snapshot');
  ok('put a v2', await put('data/a.txt', 'a v2', inBucket(SRC)));
  ok('remove b', await remove('data/b.txt', inBucket(SRC)));
  ok('put d', await put('data/d.txt', 'd v2', inBucket(SRC)));
  const { snapshotVersion: v2 } = ok('unnamed snapshot', await createBucketSnapshot(SRC, { config: cfg }));
  assert.ok(BigInt(v2) > BigInt(v1), 'second snapshot is newer');

  step('listBucketSnapshots: both, newest first, the name with spaces intact');
  const snaps = ok('listBucketSnapshots', await listBucketSnapshots(SRC, { config: cfg })).snapshots;
  assert.deepEqual(snaps.map((s) => [s.version, s.name]), [[v2, undefined], [v1, SNAP_NAME]]);
  for (const s of snaps) assert.ok(s.creationDate instanceof Date && !Number.isNaN(s.creationDate.getTime()), 'snapshot creationDate');
  const page1 = ok('listBucketSnapshots limit 1', await listBucketSnapshots(SRC, { limit: 1, config: cfg }));
  assert.deepEqual(page1.snapshots.map((s) => s.version), [v2]);
  assert.ok(page1.paginationToken, 'a truncated snapshot listing has a continuation token');
  const page2 = ok('listBucketSnapshots page 2', await listBucketSnapshots(SRC, { limit: 1, paginationToken: page1.paginationToken, config: cfg }));
  assert.deepEqual(page2.snapshots.map((s) => s.version), [v1]);
  assert.equal(page2.paginationToken, undefined, 'no token on the last page');

  step('reads at the snapshot version');
  assert.equal(await text(SRC, 'data/a.txt', { snapshotVersion: v1 }), 'a v1');
  assert.equal(await text(SRC, 'data/b.txt', { snapshotVersion: v1 }), 'b v1');
  assert.equal(await text(SRC, 'data/a.txt'), 'a v2');
  assert.deepEqual(await names(SRC, { snapshotVersion: v1 }), ['data/a.txt', 'data/b.txt', 'data/c.txt', 'readme.md']);
  assert.deepEqual(await names(SRC), ['data/a.txt', 'data/c.txt', 'data/d.txt', 'readme.md']);
  const h = ok('head at snapshot', await head('data/a.txt', { snapshotVersion: v1, ...inBucket(SRC) }));
  assert.equal(h.size, 4);

  step('fork two siblings from the named snapshot');
  for (const f of [FA, FB]) {
    const r = ok(`createBucket ${f}`, await createBucket(f, { sourceBucketName: SRC, sourceBucketSnapshot: v1, config: cfg }));
    assert.equal(r.sourceBucketName, SRC);
  }
  const forkC = `${P}-fork-now`;
  ok('fork from the current state', await createBucket(forkC, { sourceBucketName: SRC, config: cfg }));

  step('getBucketInfo shows fork parents and the source has children');
  for (const f of [FA, FB]) {
    info = ok(`getBucketInfo ${f}`, await getBucketInfo(f, { config: cfg }));
    assert.equal(info.isSnapshotEnabled, true, `${f} inherits snapshots`);
    assert.equal(info.forkInfo?.parents?.length, 1, `${f} has one parent`);
    const parent = info.forkInfo.parents[0];
    assert.equal(parent.bucketName, SRC);
    assert.equal(parent.snapshot, v1);
    assert.ok(!Number.isNaN(parent.forkCreatedAt.getTime()), 'forkCreatedAt is a date');
    assert.ok(!Number.isNaN(parent.snapshotCreatedAt.getTime()), 'snapshotCreatedAt is a date');
    assert.ok(parent.snapshotCreatedAt <= parent.forkCreatedAt, 'snapshot taken before the fork');
  }
  info = ok('getBucketInfo fork-now', await getBucketInfo(forkC, { config: cfg }));
  assert.ok(BigInt(info.forkInfo.parents[0].snapshot) >= BigInt(v2), 'fork from now uses a fresh snapshot');
  info = ok('getBucketInfo src', await getBucketInfo(SRC, { config: cfg }));
  assert.equal(info.forkInfo?.hasChildren, true, 'the source reports children');

  step('listForks lists the three forks with their snapshots');
  const forks = ok('listForks', await listForks(SRC, { config: cfg })).forks;
  assert.deepEqual(forks.map((f) => f.name).sort(), [FA, FB, forkC].sort());
  for (const f of forks.filter((x) => x.name !== forkC)) assert.equal(f.snapshot, v1, `${f.name} snapshot`);
  const noForks = ok('listForks of a fork', await listForks(FA, { config: cfg })).forks;
  assert.deepEqual(noForks, []);
  const all = ok('listBuckets', await listBuckets({ config: cfg })).buckets.map((b) => b.name);
  for (const b of [SRC, FA, FB, forkC]) assert.ok(all.includes(b), `listBuckets includes ${b}`);
  ok('remove fork-now', await removeBucket(forkC, { force: true, config: cfg }));

  step('forks start from the snapshot, not from the current source');
  assert.deepEqual(await names(FA), ['data/a.txt', 'data/b.txt', 'data/c.txt', 'readme.md']);
  assert.equal(await text(FA, 'data/a.txt'), 'a v1');

  step('createAccessKey with bucketsRole Editor on fork A, ReadOnly on fork B');
  const edKey = ok('createAccessKey editor', await createAccessKey(`${FA}-key`, { bucketsRole: [{ bucket: FA, role: 'Editor' }], config: cfg }));
  assert.ok(edKey.id && edKey.secret, 'key id and secret');
  const roKey = ok('createAccessKey readonly', await createAccessKey(`${FB}-ro`, { bucketsRole: [{ bucket: FB, role: 'ReadOnly' }], config: cfg }));
  const ed = { accessKeyId: edKey.id, secretAccessKey: edKey.secret };
  const ro = { accessKeyId: roKey.id, secretAccessKey: roKey.secret };
  const fetched = ok('getAccessKey', await getAccessKey(edKey.id, { config: cfg }));
  assert.equal(fetched.name, `${FA}-key`);
  assert.deepEqual(fetched.roles, [{ bucket: FA, role: 'Editor' }]);
  const keys = ok('listAccessKeys', await listAccessKeys({ config: cfg })).accessKeys;
  assert.ok(keys.some((k) => k.id === roKey.id && k.roles?.[0]?.role === 'ReadOnly'), 'listAccessKeys shows the ReadOnly key');

  step('the Editor key writes and reads its fork');
  ok('scoped put', await put('agent/output.txt', 'written by agent A', inBucket(FA, ed)));
  ok('scoped overwrite', await put('data/c.txt', 'c edited by A', inBucket(FA, ed)));
  ok('scoped remove', await remove('readme.md', inBucket(FA, ed)));
  assert.equal(await text(FA, 'agent/output.txt', {}, ed), 'written by agent A');
  assert.deepEqual(await names(FA, {}, ed), ['agent/output.txt', 'data/a.txt', 'data/b.txt', 'data/c.txt']);

  step('the Editor key is AccessDenied on the source and on the sibling');
  const s3ed = s3Client(ed);
  for (const bucket of [SRC, FB]) {
    await rejects(`put ${bucket}`, s3ed.send(new PutObjectCommand({ Bucket: bucket, Key: 'intruder.txt', Body: 'x' })), 403, 'AccessDenied');
    await rejects(`get ${bucket}`, s3ed.send(new GetObjectCommand({ Bucket: bucket, Key: 'data/a.txt' })), 403, 'AccessDenied');
    await rejects(`list ${bucket}`, s3ed.send(new ListObjectsV2Command({ Bucket: bucket })), 403, 'AccessDenied');
    bad(`SDK put ${bucket}`, await put('intruder.txt', 'x', inBucket(bucket, ed)), /denied|403|forbidden/i);
  }
  bad('scoped key snapshots the source', await createBucketSnapshot(SRC, { config: tigrisConfig(ed) }), /denied|403|forbidden/i);
  bad('scoped key forks the source', await createBucket(`${P}-rogue`, { sourceBucketName: SRC, config: tigrisConfig(ed) }), /denied|403|forbidden/i);
  bad('scoped key deletes the source', await removeBucket(SRC, { force: true, config: tigrisConfig(ed) }), /denied|403|forbidden/i);
  bad('scoped key mints a key for the source', await createAccessKey('rogue', { bucketsRole: [{ bucket: SRC, role: 'Editor' }], config: tigrisConfig(ed) }));

  step('the ReadOnly key reads its fork and cannot write it');
  assert.equal(await text(FB, 'data/a.txt', {}, ro), 'a v1');
  await rejects('readonly put', s3Client(ro).send(new PutObjectCommand({ Bucket: FB, Key: 'nope.txt', Body: 'x' })), 403, 'AccessDenied');
  await rejects('readonly get on fork A', s3Client(ro).send(new GetObjectCommand({ Bucket: FA, Key: 'data/a.txt' })), 403, 'AccessDenied');

  step('fork isolation: A\'s writes are not in the source or in B, and B\'s are not in A');
  ok('root writes B', await put('only-in-b.txt', 'b', inBucket(FB)));
  assert.deepEqual(await names(SRC), ['data/a.txt', 'data/c.txt', 'data/d.txt', 'readme.md']);
  assert.equal(await text(SRC, 'data/c.txt'), 'c v1');
  assert.deepEqual(await names(FB), ['data/a.txt', 'data/b.txt', 'data/c.txt', 'only-in-b.txt', 'readme.md']);
  assert.equal(await text(FB, 'data/c.txt'), 'c v1');
  assert.ok(!(await names(FA)).includes('only-in-b.txt'));
  assert.deepEqual(await names(SRC, { snapshotVersion: v1 }), ['data/a.txt', 'data/b.txt', 'data/c.txt', 'readme.md']);

  step('multipart put through the SDK into the fork with the scoped key');
  const blob = crypto.randomBytes(11 * 1024 * 1024);
  ok('multipart put', await put('agent/blob.bin', blob, { multipart: true, partSize: 5 * 1024 * 1024, ...inBucket(FA, ed) }));
  const back = await s3ed.send(new GetObjectCommand({ Bucket: FA, Key: 'agent/blob.bin' }));
  assert.match(back.ETag, /-3"$/);
  assert.ok(Buffer.from(await back.Body.transformToByteArray()).equals(blob), 'multipart blob round trip');

  step('removeAccessKey revokes the key on its next request');
  ok('removeAccessKey', await removeAccessKey(edKey.id, { config: cfg }));
  await rejects('revoked key', s3ed.send(new GetObjectCommand({ Bucket: FA, Key: 'agent/output.txt' })), 403, 'InvalidAccessKeyId');
  bad('remove it again', await removeAccessKey(edKey.id, { config: cfg }));
  ok('removeAccessKey readonly', await removeAccessKey(roKey.id, { config: cfg }));

  step('deleteBucketSnapshot removes only the unnamed snapshot');
  ok('deleteBucketSnapshot', await deleteBucketSnapshot(SRC, v2, { config: cfg }));
  const left = ok('listBucketSnapshots', await listBucketSnapshots(SRC, { config: cfg })).snapshots;
  assert.ok(!left.some((s) => s.version === v2), 'deleted snapshot gone');
  assert.ok(left.some((s) => s.version === v1 && s.name === SNAP_NAME), 'named snapshot kept');
  bad('delete an unknown snapshot', await deleteBucketSnapshot(SRC, '1000000000000000000', { config: cfg }));

  step('removeBucket: the source is refused while forks exist, even with force');
  bad('remove source with forks', await removeBucket(SRC, { force: true, config: cfg }));
  assert.equal(await text(SRC, 'data/a.txt'), 'a v2');
  ok('remove fork A', await removeBucket(FA, { force: true, config: cfg }));
  ok('remove fork B', await removeBucket(FB, { force: true, config: cfg }));
  bad('getBucketInfo of a removed fork', await getBucketInfo(FA, { config: cfg }));
  assert.deepEqual(await names(SRC), ['data/a.txt', 'data/c.txt', 'data/d.txt', 'readme.md'], 'source untouched by fork deletion');
  info = ok('getBucketInfo src', await getBucketInfo(SRC, { config: cfg }));
  assert.ok(!info.forkInfo?.hasChildren, 'source no longer has children');
  bad('remove non-empty source without force', await removeBucket(SRC, { config: cfg }));
  ok('remove source with force', await removeBucket(SRC, { force: true, config: cfg }));
  bad('getBucketInfo of the removed source', await getBucketInfo(SRC, { config: cfg }));
});
