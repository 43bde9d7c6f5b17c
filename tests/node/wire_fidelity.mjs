// SPDX-License-Identifier: Apache-2.0
// Wire fidelity between the official Tigris SDKs and the tfork CLI (driven by
// tests/e2e/wire_fidelity.sh). Sub-commands:
//
//   cli-to-sdk MANIFEST SNAPSHOT_NAME AUTO_MANIFEST
//       forks, snapshots and keys made by `tfork fork create` / `tfork snapshot take` must
//       look right through @tigrisdata/storage and @tigrisdata/iam, and the manifest's keys
//       must work through the SDK, scoped to their own fork.
//   after-teardown MANIFEST
//       after `tfork teardown --manifest`, the SDK sees the forks and keys gone, the source
//       and its snapshot intact.
//   sdk-make PREFIX
//       the SDK makes a source, snapshots and forks; prints a JSON document describing them
//       (stdout) for the shell to compare with `tfork fork head|ls` and `tfork snapshot ls`.
//   sdk-sees-snapshot BUCKET VERSION NAME
//       a snapshot taken by the CLI is listed by the SDK with that version and name.
//   sdk-gone BUCKET...
//       getBucketInfo fails for each bucket.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import {
  createBucket,
  createBucketSnapshot,
  get,
  getBucketInfo,
  list,
  listBucketSnapshots,
  listForks,
  put,
} from '@tigrisdata/storage';
import { getAccessKey } from '@tigrisdata/iam';
import { bad, endpoint, main, ok, rejects, s3Client, step, tigrisConfig } from './e2e_lib.mjs';

const [mode, ...args] = process.argv.slice(2);
const cfg = tigrisConfig();

async function allSnapshots(bucket) {
  const out = [];
  let paginationToken;
  do {
    const page = ok(`listBucketSnapshots ${bucket}`, await listBucketSnapshots(bucket, { paginationToken, config: cfg }));
    out.push(...page.snapshots);
    paginationToken = page.paginationToken;
  } while (paginationToken);
  return out;
}

async function keysOf(bucket, creds) {
  const page = ok(`list ${bucket}`, await list({ config: tigrisConfig(creds, bucket) }));
  return page.items.map((i) => i.name).sort();
}

const modes = {
  async 'cli-to-sdk'(manifestPath, snapshotName, autoManifestPath) {
    const m = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
    const auto = JSON.parse(fs.readFileSync(autoManifestPath, 'utf8'));
    step(`manifest: ${m.forks.length} forks of ${m.source} at ${m.snapshot}`);
    assert.equal(m.endpoint, endpoint(), 'the manifest records the endpoint it used');
    assert.ok(m.forks.length >= 2);

    step('listBucketSnapshots shows the CLI snapshots with their names');
    const snaps = await allSnapshots(m.source);
    const named = snaps.find((s) => s.version === m.snapshot);
    assert.ok(named, `snapshot ${m.snapshot} listed by the SDK: ${JSON.stringify(snaps)}`);
    assert.equal(named.name, snapshotName, 'snapshot name made by `tfork snapshot take --name`');
    const implicit = snaps.find((s) => s.version === auto.snapshot);
    assert.ok(implicit, `fork create's own snapshot ${auto.snapshot} listed`);
    assert.equal(implicit.name, `tfork ${auto.forks[0].bucket.replace(/-1$/, '')}`, 'default --snapshot-name is "tfork <prefix>"');
    for (let i = 1; i < snaps.length; i++) {
      assert.ok(BigInt(snaps[i - 1].version) > BigInt(snaps[i].version), 'snapshots newest first');
    }

    step('getBucketInfo: each fork names its source and the shared snapshot');
    for (const f of m.forks) {
      assert.equal(f.status, 'created');
      const info = ok(`getBucketInfo ${f.bucket}`, await getBucketInfo(f.bucket, { config: cfg }));
      assert.equal(info.isSnapshotEnabled, true, `${f.bucket} is snapshot-enabled`);
      assert.equal(info.forkInfo?.parents?.[0]?.bucketName, m.source, `${f.bucket} parent`);
      assert.equal(info.forkInfo.parents[0].snapshot, m.snapshot, `${f.bucket} snapshot`);
    }
    const srcInfo = ok('getBucketInfo source', await getBucketInfo(m.source, { config: cfg }));
    assert.equal(srcInfo.forkInfo?.hasChildren, true, 'source has children');

    step('listForks sees every fork of the manifest');
    const forks = ok('listForks', await listForks(m.source, { config: cfg })).forks;
    for (const f of [...m.forks, ...auto.forks]) {
      const seen = forks.find((x) => x.name === f.bucket);
      assert.ok(seen, `listForks includes ${f.bucket}`);
    }
    assert.equal(forks.find((x) => x.name === m.forks[0].bucket).snapshot, m.snapshot);

    step('getAccessKey: each manifest key is Editor on its own fork only');
    for (const f of m.forks) {
      assert.match(f.access_key_id ?? '', /.+/, `${f.bucket} has a key`);
      assert.equal(f.role, 'Editor');
      const k = ok(`getAccessKey ${f.access_key_id}`, await getAccessKey(f.access_key_id, { config: cfg }));
      assert.equal(k.name, `${f.bucket}-key`, 'key named <fork>-key');
      assert.deepEqual(k.roles, [{ bucket: f.bucket, role: 'Editor' }]);
      assert.equal(k.status, 'active');
    }

    step('the manifest keys work through the SDK, scoped to their fork');
    const before = await keysOf(m.source);
    for (const [i, f] of m.forks.entries()) {
      const creds = { accessKeyId: f.access_key_id, secretAccessKey: f.secret_access_key };
      const sdkCfg = { ...tigrisConfig(creds, f.bucket), endpoint: m.endpoint, iamEndpoint: m.iam_endpoint };
      ok(`put into ${f.bucket}`, await put(`agent-${i}/result.txt`, `agent ${i}`, { config: sdkCfg }));
      assert.equal(ok('get back', await get(`agent-${i}/result.txt`, 'string', { config: sdkCfg })), `agent ${i}`);
      assert.equal(ok('snapshot data', await get('base.txt', 'string', { config: sdkCfg })), 'base before snapshot');
      const others = [m.source, ...m.forks.filter((o) => o.bucket !== f.bucket).map((o) => o.bucket)];
      const s3 = s3Client(creds);
      for (const other of others) {
        await rejects(`${f.bucket} key writes ${other}`, s3.send(new PutObjectCommand({ Bucket: other, Key: 'x', Body: 'x' })), 403, 'AccessDenied');
        await rejects(`${f.bucket} key reads ${other}`, s3.send(new GetObjectCommand({ Bucket: other, Key: 'base.txt' })), 403, 'AccessDenied');
      }
    }
    step('isolation: agent writes are only in their own fork');
    assert.deepEqual(await keysOf(m.source), before, 'source unchanged');
    for (const [i, f] of m.forks.entries()) {
      const ks = await keysOf(f.bucket);
      assert.ok(ks.includes(`agent-${i}/result.txt`));
      assert.deepEqual(ks.filter((k) => k.startsWith('agent-') && k !== `agent-${i}/result.txt`), [], `${f.bucket} sees only its own agent`);
      assert.ok(!ks.includes('after.txt'), `${f.bucket} does not see what was written after the snapshot`);
    }
  },

  async 'after-teardown'(manifestPath) {
    const m = JSON.parse(fs.readFileSync(manifestPath, 'utf8'));
    for (const f of m.forks) {
      bad(`getBucketInfo ${f.bucket} after teardown`, await getBucketInfo(f.bucket, { config: cfg }));
      bad(`getAccessKey ${f.access_key_id} after teardown`, await getAccessKey(f.access_key_id, { config: cfg }));
      await rejects('torn-down key', s3Client({ accessKeyId: f.access_key_id, secretAccessKey: f.secret_access_key })
        .send(new GetObjectCommand({ Bucket: f.bucket, Key: 'base.txt' })), 403, 'InvalidAccessKeyId');
    }
    const forks = ok('listForks', await listForks(m.source, { config: cfg })).forks.map((f) => f.name);
    for (const f of m.forks) assert.ok(!forks.includes(f.bucket), `${f.bucket} no longer listed as a fork`);
    assert.ok((await keysOf(m.source)).includes('base.txt'), 'source intact');
    assert.ok((await allSnapshots(m.source)).some((s) => s.version === m.snapshot), 'snapshot kept by teardown');
  },

  async 'sdk-make'(prefix) {
    const src = `${prefix}-src`;
    ok('createBucket', await createBucket(src, { enableSnapshot: true, config: cfg }));
    ok('put', await put('one.txt', 'one', { config: tigrisConfig(undefined, src) }));
    const named = ok('named snapshot', await createBucketSnapshot(src, { name: 'made by the sdk', config: cfg })).snapshotVersion;
    ok('put', await put('two.txt', 'two', { config: tigrisConfig(undefined, src) }));
    const unnamed = ok('unnamed snapshot', await createBucketSnapshot(src, { config: cfg })).snapshotVersion;
    const f1 = `${prefix}-f1`;
    const f2 = `${prefix}-f2`;
    const child = `${prefix}-f1-child`;
    ok('fork f1', await createBucket(f1, { sourceBucketName: src, sourceBucketSnapshot: named, config: cfg }));
    ok('fork f2', await createBucket(f2, { sourceBucketName: src, config: cfg }));
    const f1snap = ok('snapshot f1', await createBucketSnapshot(f1, { name: 'fork snapshot', config: cfg })).snapshotVersion;
    ok('fork of fork', await createBucket(child, { sourceBucketName: f1, sourceBucketSnapshot: f1snap, config: cfg }));
    const f2info = ok('getBucketInfo f2', await getBucketInfo(f2, { config: cfg }));
    const doc = {
      source: src, named, unnamed, f1, f2, child, f1snap,
      f2snap: f2info.forkInfo.parents[0].snapshot,
    };
    process.stdout.write(`${JSON.stringify(doc)}\n`);
  },

  async 'sdk-sees-snapshot'(bucket, version, name) {
    const snaps = await allSnapshots(bucket);
    const s = snaps.find((x) => x.version === version);
    assert.ok(s, `snapshot ${version} of ${bucket} listed by the SDK: ${JSON.stringify(snaps)}`);
    assert.equal(s.name, name);
    assert.equal(snaps[0].version, version, 'the newest snapshot comes first');
  },

  async 'sdk-gone'(...buckets) {
    for (const b of buckets) bad(`getBucketInfo ${b}`, await getBucketInfo(b, { config: cfg }));
  },
};

await main(async () => {
  const fn = modes[mode];
  if (!fn) throw new Error(`unknown mode ${mode}; one of ${Object.keys(modes).join(', ')}`);
  await fn(...args);
});
