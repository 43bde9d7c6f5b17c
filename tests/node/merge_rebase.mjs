// SPDX-License-Identifier: Apache-2.0
// @tigrisdata/storage's mergeFork and rebaseFork against `tfork serve` (tigris-wire §2.11):
// a fork's writes and deletes land in its source, answered with the source's new snapshot
// version; a sibling keeps its view; a merge from a non-direct fork is refused; rebase makes
// the source's later writes visible in the fork while the fork's own writes stay.
import assert from 'node:assert/strict';
import { createBucket, get, list, mergeFork, put, rebaseFork, remove, removeBucket } from '@tigrisdata/storage';
import { bad, main, ok, step, tigrisConfig } from './e2e_lib.mjs';

const P = process.argv[2] ?? 'node-mr';
const SRC = `${P}-src`;
const FA = `${P}-a`;
const FB = `${P}-b`;
const DEEP = `${P}-deep`;

const cfg = tigrisConfig();
const inBucket = (bucket) => ({ config: tigrisConfig(undefined, bucket) });
const text = async (bucket, key, opts = {}) =>
  ok(`get ${bucket}/${key}`, await get(key, 'string', { ...opts, ...inBucket(bucket) }));
const names = async (bucket) =>
  ok(`list ${bucket}`, await list(inBucket(bucket))).items.map((i) => i.name).sort();

await main(async () => {
  step('a source and two forks');
  ok('createBucket src', await createBucket(SRC, { enableSnapshot: true, config: cfg }));
  ok('put keep', await put('keep.txt', 'keep', inBucket(SRC)));
  ok('put edit', await put('edit.txt', 'edit v1', inBucket(SRC)));
  ok('put gone', await put('gone.txt', 'gone', inBucket(SRC)));
  ok('fork a', await createBucket(FA, { sourceBucketName: SRC, config: cfg }));
  ok('fork b', await createBucket(FB, { sourceBucketName: SRC, config: cfg }));
  ok('fork of a', await createBucket(DEEP, { sourceBucketName: FA, config: cfg }));

  step('agent a writes, overwrites and deletes in its fork');
  ok('a edit', await put('edit.txt', 'edit by a', inBucket(FA)));
  ok('a new', await put('result.txt', 'result of a', inBucket(FA)));
  ok('a delete', await remove('gone.txt', inBucket(FA)));

  step('mergeFork refuses a fork that is not a direct fork of the target');
  bad('merge deep into src', await mergeFork(DEEP, SRC, { config: cfg }));
  assert.equal(await text(SRC, 'edit.txt'), 'edit v1');

  step('mergeFork(a, src) lands a\'s changes and answers the new version');
  const merged = ok('mergeFork', await mergeFork(FA, SRC, { config: cfg }));
  assert.match(merged.snapshotVersion, /^\d{19}$/, 'mergeFork answers a snapshot version');
  assert.deepEqual(await names(SRC), ['edit.txt', 'keep.txt', 'result.txt']);
  assert.equal(await text(SRC, 'edit.txt'), 'edit by a');
  assert.equal(await text(SRC, 'result.txt'), 'result of a');
  assert.equal(await text(SRC, 'edit.txt', { snapshotVersion: merged.snapshotVersion }), 'edit by a');
  step('the sibling still sees the source as it was forked');
  assert.deepEqual(await names(FB), ['edit.txt', 'gone.txt', 'keep.txt']);
  assert.equal(await text(FB, 'edit.txt'), 'edit v1');

  step('rebaseFork(b) shows the merged source in b; b\'s own writes stay');
  ok('b own', await put('own.txt', 'b only', inBucket(FB)));
  const rebased = ok('rebaseFork', await rebaseFork(FB, { config: cfg }));
  assert.match(rebased.snapshotVersion, /^\d{19}$/, 'rebaseFork answers a snapshot version');
  assert.deepEqual(await names(FB), ['edit.txt', 'keep.txt', 'own.txt', 'result.txt']);
  assert.equal(await text(FB, 'edit.txt'), 'edit by a');
  assert.equal(await text(FB, 'own.txt'), 'b only');
  bad('rebase a fork that has forks', await rebaseFork(FA, { config: cfg }));

  step('clean up, children first');
  for (const b of [DEEP, FA, FB, SRC]) ok(`removeBucket ${b}`, await removeBucket(b, { force: true, config: cfg }));
});
