// SPDX-License-Identifier: Apache-2.0
// tfork mcp driven by the official MCP TypeScript SDK against a real `tfork serve`
// (tests/e2e/mcp_sdk.sh): every tool of operator mode over stdio, progress, cancellation of a
// 64-fork fork_create, agent mode with the fork's own key, --read-only, the server's reach
// (a bucket outside it refused with nothing sent), no secret in any result, and the
// Streamable HTTP transport.
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CreateBucketCommand, PutObjectCommand, ListBucketsCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import { main, s3Client, rootCreds, step } from './e2e_lib.mjs';
import {
  call, failing, httpClient, rpcError, startHttpServer, startRecordingProxy, stdioClient,
} from './mcp_lib.mjs';

const work = process.argv[2];
const source = 'mcp-src';
const outside = 'mcp-outside';
const results = [];  // every tool result text, checked for secrets at the end

async function record(promise) {
  const value = await promise;
  results.push(JSON.stringify(value));
  return value;
}

async function setup(s3) {
  const tigrisHeaders = (cmd) => cmd.middlewareStack.add((next) => (args) => {
    args.request.headers['x-tigris-enable-snapshot'] = 'true';
    return next(args);
  }, { step: 'build' });
  const create = new CreateBucketCommand({ Bucket: source });
  tigrisHeaders(create);
  await s3.send(create);
  await s3.send(new CreateBucketCommand({ Bucket: outside }));
  for (const key of ['data/a.txt', 'data/b.txt', 'readme.md'])
    await s3.send(new PutObjectCommand({ Bucket: source, Key: key, Body: `body of ${key}\n` }));
  await s3.send(new PutObjectCommand({ Bucket: outside, Key: 'secret.txt', Body: 'not yours' }));
}

async function operatorMode(proxy) {
  step('operator mode over stdio: tools/list');
  const { client, transport, logs } = await stdioClient(
    ['--source', source, '--manifest-dir', work, '--endpoint-url', proxy.url]);
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  assert.deepEqual(names, ['bucket_tree', 'fork_create', 'fork_diff', 'fork_head', 'fork_list',
    'fork_merge', 'fork_teardown', 'object_delete', 'object_get', 'object_list', 'object_presign',
    'object_put', 'snapshot_list', 'snapshot_take']);
  for (const tool of tools) {
    assert.ok(tool.description.length > 40, `${tool.name} has a description`);
    assert.equal(tool.inputSchema.type, 'object', `${tool.name} inputSchema`);
    assert.equal(tool.outputSchema.type, 'object', `${tool.name} outputSchema`);
    for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'])
      assert.equal(typeof tool.annotations[hint], 'boolean', `${tool.name} ${hint}`);
  }
  for (const name of ['fork_merge', 'fork_teardown']) {
    const tool = tools.find((t) => t.name === name);
    assert.match(tool.description, /ask the user/i, `${name} says to ask the user`);
    assert.equal(tool.annotations.destructiveHint, true, `${name} is destructive`);
  }
  assert.equal(tools.find((t) => t.name === 'fork_head').annotations.readOnlyHint, true);

  step('snapshot_take, snapshot_list (paged)');
  const first = await record(call(client, 'snapshot_take', { bucket: source, name: 'one' }));
  await record(call(client, 'snapshot_take', { bucket: source, name: 'two' }));
  const page1 = await record(call(client, 'snapshot_list', { bucket: source, limit: 1 }));
  assert.equal(page1.snapshots.length, 1);
  assert.equal(page1.snapshots[0].name, 'two', 'newest first');
  const page2 = await record(call(client, 'snapshot_list', { bucket: source, cursor: page1.next_cursor }));
  assert.ok(page2.snapshots.some((s) => s.version === first.version), 'the second page has the older one');
  await failing(client, 'snapshot_list', { bucket: source, cursor: 'tc1.zz' }, 64);

  step('fork_create with progress notifications; the manifest, never a secret');
  const progress = [];
  const created = await record(call(client, 'fork_create',
    { source, count: 3, prefix: 'op', snapshot: first.version },
    { onprogress: (p) => progress.push(p) }));
  assert.equal(created.forks.length, 3);
  assert.ok(created.forks.every((f) => f.status === 'created' && f.access_key_id?.startsWith('tid_')));
  assert.ok(created.forks.every((f) => !('secret_access_key' in f)), 'no secret in the result');
  assert.equal(created.manifest, path.join(work, 'op.manifest.json'));
  const manifest = JSON.parse(await readFile(created.manifest, 'utf8'));
  assert.ok(manifest.forks.every((f) => f.secret_access_key?.startsWith('tsec_')), 'secrets in the manifest');
  assert.ok(progress.length >= 1, 'progress notifications came');
  assert.ok(progress.every((p, i) => i === 0 || p.progress > progress[i - 1].progress), 'progress increases');

  step('fork_list (paged), fork_head, bucket_tree');
  const listed = await record(call(client, 'fork_list', { limit: 2 }));
  assert.deepEqual(listed.forks.map((f) => f.bucket), ['op-1', 'op-2']);
  const rest = await record(call(client, 'fork_list', { cursor: listed.next_cursor }));
  assert.deepEqual(rest.forks.map((f) => f.bucket), ['op-3']);
  assert.equal(rest.next_cursor, null);
  const head = await record(call(client, 'fork_head', { buckets: ['op-1', source] }));
  assert.equal(head.buckets[0].fork_source, source);
  assert.equal(head.buckets[1].is_fork_parent, true);
  const tree = await record(call(client, 'bucket_tree', { bucket: source }));
  assert.equal(tree.bucket, source);

  step('object tools on a fork: put, get (text, binary, beyond the cap), list, presign, delete');
  await record(call(client, 'object_put', { bucket: 'op-1', key: 'data/new.txt', text: 'hello\n' }));
  await record(call(client, 'object_put', { bucket: 'op-1', key: 'bin', base64: Buffer.from([0, 1, 2, 255]).toString('base64') }));
  const text = await record(call(client, 'object_get', { bucket: 'op-1', key: 'data/new.txt' }));
  assert.equal(text.encoding, 'text');
  assert.equal(text.text, 'hello\n');
  const binary = await record(call(client, 'object_get', { bucket: 'op-1', key: 'bin' }));
  assert.equal(binary.encoding, 'base64');
  assert.deepEqual([...Buffer.from(binary.base64, 'base64')], [0, 1, 2, 255]);
  const inherited = await record(call(client, 'object_get', { bucket: 'op-1', key: 'readme.md' }));
  assert.equal(inherited.text, 'body of readme.md\n', 'a fork holds its source\'s data');
  const listing = await record(call(client, 'object_list', { bucket: 'op-1', delimiter: '/', limit: 2 }));
  assert.ok(listing.common_prefixes.includes('data/'), JSON.stringify(listing));
  assert.ok(listing.next_cursor, 'a second page');
  const more = await record(call(client, 'object_list', { bucket: 'op-1', delimiter: '/', cursor: listing.next_cursor }));
  assert.ok(more.objects.length + more.common_prefixes.length >= 1);
  const url = await record(call(client, 'object_presign', { bucket: 'op-1', key: 'data/new.txt' }));
  const fetched = await fetch(url.url);
  assert.equal(fetched.status, 200);
  assert.equal(await fetched.text(), 'hello\n', 'the presigned URL reads the object');
  await record(call(client, 'object_delete', { bucket: 'op-1', key: 'bin' }));

  step('fork_diff (paged)');
  await record(call(client, 'object_put', { bucket: 'op-1', key: 'data/z.txt', text: 'z' }));
  const diff1 = await record(call(client, 'fork_diff', { fork: 'op-1', limit: 1 }));
  assert.equal(diff1.changes.length, 1);
  assert.ok(diff1.next_cursor);
  const diff2 = await record(call(client, 'fork_diff', { fork: 'op-1', cursor: diff1.next_cursor }));
  const changed = [...diff1.changes, ...diff2.changes].map((c) => `${c.status} ${c.key}`);
  assert.deepEqual(changed, ['added data/new.txt', 'added data/z.txt']);
  const stat = await record(call(client, 'fork_diff', { fork: 'op-2', stat_only: true }));
  assert.deepEqual(stat.stat, { added: 0, modified: 0, deleted: 0, bytes: 0 });

  step('the source is never written; a bucket outside is refused with nothing sent');
  for (const [name, args] of [
    ['object_put', { bucket: source, key: 'x', text: 'no' }],
    ['object_delete', { bucket: source, key: 'readme.md' }],
    ['object_presign', { bucket: source, key: 'x', method: 'PUT' }],
  ]) {
    const before = proxy.seen.length;
    await failing(client, name, args, 2);
    assert.equal(proxy.seen.length, before, `${name} on the source sent nothing`);
  }
  const refused = await failing(client, 'object_get', { bucket: outside, key: 'secret.txt' }, 2);
  assert.match(refused, /outside this server's reach/);
  assert.ok(!proxy.seen.some((r) => r.url.includes('secret.txt')), 'the outside object was never read');
  await failing(client, 'fork_teardown', { forks: [source], confirm: true }, 2);

  step('adversarial keys and arguments');
  await failing(client, 'object_put', { bucket: 'op-1', key: 'a/../b', text: 'x' }, 64);
  await failing(client, 'object_put', { bucket: 'op-1', key: 'evil\u001b[2J', text: 'x' }, 64);
  await rpcError(client.callTool({ name: 'fork_merge', arguments: { fork: 'op-1', confirm: 'true' } }),
    -32602, 'confirm as a string');
  await rpcError(client.callTool({ name: 'no_such_tool', arguments: {} }), -32602, 'unknown tool');
  await rpcError(client.callTool({ name: 'fork_create', arguments: { source, count: 'two' } }),
    -32602, 'count as a string');

  step('fork_merge needs confirm: true');
  const unconfirmed = await failing(client, 'fork_merge', { fork: 'op-1' }, 64);
  assert.match(unconfirmed, /ask the user/i);

  step('fork_merge refuses a key the parent also changed, unless strategy is fork-wins');
  await s3Client().send(new PutObjectCommand({ Bucket: source, Key: 'data/z.txt', Body: 'the parent too' }));
  const conflict = await failing(client, 'fork_merge', { fork: 'op-1', confirm: true }, 6);
  assert.match(conflict, /data\/z\.txt/);
  await rpcError(client.callTool({ name: 'fork_merge', arguments: { fork: 'op-1', confirm: true, strategy: 'parent-wins' } }),
    -32602, 'a strategy outside its enum');
  step('fork_merge with prefix: the same promotion as fork merge --prefix (issue 23 §1)');
  const inPrefix = await failing(client, 'fork_merge', { fork: 'op-1', confirm: true, prefix: 'data/' }, 6);
  assert.match(inPrefix, /data\/z\.txt/, 'a conflict inside the prefix refuses');
  await rpcError(client.callTool({ name: 'fork_merge', arguments: { fork: 'op-1', confirm: true, prefix: [] } }),
    -32602, 'an empty prefix list');
  const promoted = await record(call(client, 'fork_merge', { fork: 'op-1', confirm: true, prefix: ['data/new'] }));
  assert.deepEqual([promoted.copied, promoted.deleted, promoted.skipped], [1, 0, 0]);
  assert.ok(promoted.before_snapshot, 'a before-merge snapshot first');
  const copied = await s3Client().send(new GetObjectCommand({ Bucket: source, Key: 'data/new.txt' }));
  assert.equal(await copied.Body.transformToString(), 'hello\n', 'copied into the parent');
  const merged = await record(call(client, 'fork_merge', { fork: 'op-1', confirm: true, strategy: 'fork-wins' }));
  assert.equal(merged.into, source);
  assert.ok(merged.before_snapshot, 'a before-merge snapshot');
  assert.equal(merged.replaced, 1, 'one of the parent\'s changes replaced');

  step('logging/setLevel');
  await client.setLoggingLevel('debug');

  step('fork_teardown needs confirm: true; then nothing of the run is left');
  await failing(client, 'fork_teardown', { all: true }, 64);
  const gone = await record(call(client, 'fork_teardown', { forks: ['op-2'], confirm: true }));
  assert.equal(gone.forks[0].status, 'deleted');
  const all = await record(call(client, 'fork_teardown', { all: true, confirm: true }));
  assert.ok(all.forks.every((f) => ['deleted', 'already-gone'].includes(f.status)), JSON.stringify(all));
  const after = await record(call(client, 'fork_list', {}));
  assert.deepEqual(after.forks, []);
  await transport.close();
  return { manifest, logs };
}

async function agentMode(proxy, s3) {
  step('agent mode: the fork\'s own key, even with the operator\'s credentials in the environment');
  const operator = await stdioClient(['--source', source, '--manifest-dir', work, '--endpoint-url', proxy.url]);
  const created = await call(operator.client, 'fork_create', { source, count: 2, prefix: 'ag' });
  const manifest = JSON.parse(await readFile(created.manifest, 'utf8'));
  const agentKey = manifest.forks[1].access_key_id;
  const { client, transport } = await stdioClient(
    ['--manifest', created.manifest, '--fork', '2', '--endpoint-url', proxy.url],
    { extraEnv: { AWS_ACCESS_KEY_ID: rootCreds().accessKeyId, AWS_SECRET_ACCESS_KEY: rootCreds().secretAccessKey } });
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), ['fork_diff', 'object_delete', 'object_get',
    'object_list', 'object_presign', 'object_put', 'snapshot_list', 'snapshot_take']);
  const before = proxy.seen.length;
  await record(call(client, 'object_put', { key: 'mine.txt', text: 'agent 2' }));
  const got = await record(call(client, 'object_get', { key: 'mine.txt' }));
  assert.equal(got.bucket, 'ag-2');
  const snap = await record(call(client, 'snapshot_take', { name: 'checkpoint' }));
  const snaps = await record(call(client, 'snapshot_list', {}));
  assert.ok(snaps.snapshots.some((s) => s.version === snap.version));
  const diff = await record(call(client, 'fork_diff', {}));
  assert.deepEqual(diff.changes.map((c) => `${c.status} ${c.key}`), ['added mine.txt']);
  await record(call(client, 'object_list', { prefix: 'data/' }));
  const sent = proxy.seen.slice(before);
  assert.ok(sent.length > 0);
  assert.ok(sent.every((r) => r.key === agentKey), `every request signed with the fork's key: ${JSON.stringify(sent)}`);

  step('agent mode: any other bucket is refused before a request is sent');
  const quiet = proxy.seen.length;
  for (const [name, args] of [
    ['object_get', { bucket: 'ag-1', key: 'readme.md' }],
    ['object_put', { bucket: source, key: 'x', text: 'no' }],
    ['object_list', { bucket: outside }],
    ['fork_diff', { fork: 'ag-1' }],
    ['snapshot_take', { bucket: source }],
  ]) await failing(client, name, args, 2);
  assert.equal(proxy.seen.length, quiet, 'nothing was sent for buckets outside the fork');
  await transport.close();

  step('--read-only: no mutating tool in tools/list, and calling one is an unknown tool');
  const ro = await stdioClient(['--source', source, '--read-only', '--endpoint-url', proxy.url]);
  const roTools = (await ro.client.listTools()).tools;
  assert.deepEqual(roTools.map((t) => t.name).sort(), ['bucket_tree', 'fork_diff', 'fork_head',
    'fork_list', 'object_get', 'object_list', 'object_presign', 'snapshot_list']);
  assert.ok(roTools.every((t) => t.annotations.readOnlyHint));
  assert.deepEqual(roTools.find((t) => t.name === 'object_presign').inputSchema.properties.method.enum, ['GET']);
  await rpcError(ro.client.callTool({ name: 'fork_create', arguments: { source, count: 1 } }), -32602, 'read-only');
  await ro.transport.close();
  await call(operator.client, 'fork_teardown', { all: true, confirm: true });
  await operator.transport.close();
  return manifest;
}

async function configurationAtEachCall(proxy) {
  step('configuration is read at each call: a profile fixed while the server runs needs no restart');
  const credentials = path.join(work, 'credentials');
  const profile = (secret) => `[mcp]\naws_access_key_id = ${rootCreds().accessKeyId}\naws_secret_access_key = ${secret}\n`;
  await writeFile(credentials, profile('not-the-secret'));
  const { client, transport } = await stdioClient(
    ['--source', source, '--endpoint-url', proxy.url, '--profile', 'mcp', '--max-inline-bytes', '8'],
    { extraEnv: { AWS_SHARED_CREDENTIALS_FILE: credentials, AWS_CONFIG_FILE: '/dev/null' } });
  await failing(client, 'fork_list', {}, 2);
  await writeFile(credentials, profile(rootCreds().secretAccessKey));
  await record(call(client, 'fork_list', {}));

  step('object_get beyond --max-inline-bytes: a presigned URL instead of the body');
  const big = await record(call(client, 'object_get', { bucket: source, key: 'readme.md' }));
  assert.equal(big.encoding, 'url');
  assert.equal(big.size, 'body of readme.md\n'.length);
  assert.ok(!('text' in big) && !('base64' in big));
  assert.equal(await (await fetch(big.url)).text(), 'body of readme.md\n', 'the URL reads the object');
  await transport.close();
}

async function cancellation(proxy, s3) {
  step('notifications/cancelled stops a fork_create of 64 in flight; fork_teardown leaves nothing');
  const { client, transport, logs } = await stdioClient(
    ['--source', source, '--manifest-dir', work, '--endpoint-url', proxy.url, '--concurrency', '64']);
  await client.setLoggingLevel('warning');
  const controller = new AbortController();
  let progressed = 0;
  const pending = client.callTool({ name: 'fork_create', arguments: { source, count: 64, prefix: 'cx' } },
    undefined, {
      signal: controller.signal,
      onprogress: () => { if (++progressed === 1) controller.abort('the test cancels'); },
    });
  await assert.rejects(pending, /abort|cancel/i);
  // The server ends the call as Ctrl-C ends the command, then says where the manifest is.
  const deadline = Date.now() + 60000;
  while (!logs.some((l) => /fork_create cancelled/.test(l.data)) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 100));
  assert.ok(logs.some((l) => /fork_create cancelled/.test(l.data)), `a warning said so: ${JSON.stringify(logs)}`);
  const manifest = JSON.parse(await readFile(path.join(work, 'cx.manifest.json'), 'utf8'));
  assert.equal(manifest.forks.length, 64, 'the manifest records every fork');
  assert.ok(manifest.forks.some((f) => f.status === 'pending'), 'forks in flight stayed pending');
  assert.ok(manifest.forks.every((f) => !f.access_key_id), 'no key was minted after the cancel');
  await call(client, 'fork_teardown', { all: true, confirm: true });
  const buckets = (await s3.send(new ListBucketsCommand({}))).Buckets ?? [];
  assert.deepEqual(buckets.map((b) => b.Name).filter((n) => n.startsWith('cx-')), [], 'no fork left');
  await transport.close();
}

async function streamableHttp(proxy) {
  step('Streamable HTTP: the same tools, with a bearer token; progress over SSE');
  const tokenFile = path.join(work, 'token');
  const server = await startHttpServer(['--source', source, '--manifest-dir', work,
    '--endpoint-url', proxy.url, '--token-file', tokenFile]);
  const token = (await readFile(tokenFile, 'utf8')).trim();
  assert.match(server.stderr(), new RegExp(tokenFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), 'the token path on stderr');
  assert.ok(!server.stderr().includes(token), 'never the token itself');
  const { client, transport } = await httpClient(server.url, token);
  assert.equal((await client.listTools()).tools.length, 14);
  const progress = [];
  const created = await record(call(client, 'fork_create', { source, count: 2, prefix: 'ht' },
    { onprogress: (p) => progress.push(p) }));
  assert.equal(created.forks.length, 2);
  assert.ok(progress.length >= 1, 'progress over SSE');
  await record(call(client, 'fork_head', { buckets: ['ht-1'] }));
  await record(call(client, 'fork_teardown', { all: true, confirm: true }));
  await transport.terminateSession();
  await transport.close();

  step('Streamable HTTP refusals: no token, another Origin, no session, an ended session');
  const post = (headers, body) => fetch(server.url, {
    method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body ?? { jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'f', version: '1' } } }),
  });
  assert.equal((await post({})).status, 401, 'no token');
  assert.equal((await post({ Authorization: 'Bearer wrong' })).status, 401, 'a wrong token');
  assert.equal((await post({ Authorization: `Bearer ${token}`, Origin: 'http://evil.example' })).status, 403, 'another Origin');
  assert.equal((await post({ Authorization: `Bearer ${token}`, 'MCP-Protocol-Version': '1999-01-01' })).status, 400, 'a bad version');
  const ok = await post({ Authorization: `Bearer ${token}` });
  assert.equal(ok.status, 200);
  const session = ok.headers.get('mcp-session-id');
  assert.match(session, /^[0-9a-f]{32}$/);
  const ping = { jsonrpc: '2.0', id: 2, method: 'ping' };
  assert.equal((await post({ Authorization: `Bearer ${token}` }, ping)).status, 400, 'no session id');
  assert.equal((await post({ Authorization: `Bearer ${token}`, 'Mcp-Session-Id': 'f'.repeat(32) }, ping)).status, 404, 'unknown session');
  const pong = await post({ Authorization: `Bearer ${token}`, 'Mcp-Session-Id': session }, ping);
  assert.deepEqual(await pong.json(), { jsonrpc: '2.0', id: 2, result: {} });
  const note = await post({ Authorization: `Bearer ${token}`, 'Mcp-Session-Id': session },
    { jsonrpc: '2.0', method: 'notifications/initialized' });
  assert.equal(note.status, 202);
  const del = await fetch(server.url, { method: 'DELETE', headers: { Authorization: `Bearer ${token}`, 'Mcp-Session-Id': session } });
  assert.equal(del.status, 200);
  assert.equal((await post({ Authorization: `Bearer ${token}`, 'Mcp-Session-Id': session }, ping)).status, 404, 'ended');
  const stopped = await server.stop();
  assert.equal(stopped.code, 0, `SIGTERM ends the HTTP server cleanly: ${JSON.stringify(stopped)}`);
}

main(async () => {
  const s3 = s3Client();
  await setup(s3);
  const proxy = await startRecordingProxy(process.env.AWS_ENDPOINT_URL);
  const { manifest } = await operatorMode(proxy);
  const agentManifest = await agentMode(proxy, s3);
  await configurationAtEachCall(proxy);
  await cancellation(proxy, s3);
  await streamableHttp(proxy);

  step('no secret in any result');
  const secrets = [rootCreds().secretAccessKey,
    ...manifest.forks.map((f) => f.secret_access_key),
    ...agentManifest.forks.map((f) => f.secret_access_key)].filter(Boolean);
  for (const text of results)
    for (const secret of secrets) assert.ok(!text.includes(secret), 'a secret reached a result');
  await proxy.close();
});
