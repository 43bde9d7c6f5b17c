// SPDX-License-Identifier: Apache-2.0
// tfork mcp's JSON-RPC layer over stdio, by a client that writes raw lines (tests/e2e/
// mcp_protocol.sh): what an SDK never sends. Version negotiation, calls before initialize, the
// error codes, a batch in 2025-03-26, and hostile input: a 100 MB line, deep nesting, a flood
// of calls; EOF ends the server with exit 0.
import assert from 'node:assert/strict';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { main, s3Client, step } from './e2e_lib.mjs';
import { initializeRaw, peakRssKib, rawServer } from './mcp_lib.mjs';

const source = 'raw-src';

async function negotiation() {
  step('version negotiation: each supported version echoed, an unknown one answered with the newest');
  for (const version of ['2025-11-25', '2025-06-18', '2025-03-26']) {
    const raw = rawServer(['--source', source]);
    const result = await initializeRaw(raw, version);
    assert.equal(result.protocolVersion, version);
    assert.ok(result.capabilities.tools && result.capabilities.logging);
    await raw.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const { tools } = (await raw.response(1)).result;
    // 2025-03-26 predates structured output: no outputSchema there.
    assert.equal('outputSchema' in tools[0], version !== '2025-03-26', `${version} outputSchema`);
    raw.child.stdin.end();
    assert.deepEqual(await raw.exited, { code: 0, signal: null }, 'EOF: exit 0');
  }
  const raw = rawServer(['--source', source]);
  assert.equal((await initializeRaw(raw, '1999-01-01')).protocolVersion, '2025-11-25');
  raw.child.stdin.end();
  await raw.exited;
}

async function errorCodes() {
  step('calls before initialize; -32700, -32600, -32601, -32602; stdout carries only JSON-RPC');
  const raw = rawServer(['--source', source]);
  await raw.send({ jsonrpc: '2.0', id: 'early', method: 'tools/list' });
  assert.equal((await raw.response('early')).error.code, -32600, 'tools/list before initialize');
  await raw.send({ jsonrpc: '2.0', id: 'early-call', method: 'tools/call', params: { name: 'fork_list', arguments: {} } });
  assert.equal((await raw.response('early-call')).error.code, -32600, 'tools/call before initialize');
  await raw.send({ jsonrpc: '2.0', id: 'ping0', method: 'ping' });
  assert.deepEqual((await raw.response('ping0')).result, {}, 'ping before initialize');
  await initializeRaw(raw);
  await raw.send({ jsonrpc: '2.0', id: 'again', method: 'initialize', params: { protocolVersion: '2025-11-25' } });
  assert.equal((await raw.response('again')).error.code, -32600, 'a second initialize');

  let from = raw.lines.length;
  await raw.send('{"jsonrpc": "2.0", "id": 1, "method": ');
  assert.equal((await raw.next((m) => m.error, from)).error.code, -32700, 'not JSON');
  from = raw.lines.length;
  await raw.send({ jsonrpc: '1.0', id: 2, method: 'ping' });
  assert.equal((await raw.response(2)).error.code, -32600, 'jsonrpc 1.0');
  await raw.send({ jsonrpc: '2.0', id: null, method: 'ping' });
  assert.equal((await raw.next((m) => m.error && m.id === null, from)).error.code, -32600, 'a null id');
  await raw.send({ jsonrpc: '2.0', id: 3, method: 'resources/list' });
  assert.equal((await raw.response(3)).error.code, -32601, 'an unknown method');
  await raw.send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'fork_merge', arguments: { fork: 'raw-src-x', confirm: 'true' } } });
  const invalid = await raw.response(4);
  assert.equal(invalid.error.code, -32602, 'confirm as a string');
  assert.match(invalid.error.message, /confirm must be a boolean/);
  await raw.send({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'fork_list', arguments: { extra: 1 } } });
  assert.equal((await raw.response(5)).error.code, -32602, 'an unknown argument');
  await raw.send({ jsonrpc: '2.0', id: 6, method: 'tools/list', params: { cursor: 'nope' } });
  assert.equal((await raw.response(6)).error.code, -32602, 'an invalid cursor');
  await raw.send({ jsonrpc: '2.0', id: 7, method: 'logging/setLevel', params: { level: 'loud' } });
  assert.equal((await raw.response(7)).error.code, -32602, 'an unknown log level');
  await raw.send([{ jsonrpc: '2.0', id: 8, method: 'ping' }]);
  assert.equal((await raw.next((m) => m.error && m.id === null, raw.lines.length - 1)).error.code, -32600,
    'no batches after 2025-03-26');
  await raw.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'none' } });
  await raw.send({ jsonrpc: '2.0', id: 9, method: 'ping' });
  assert.deepEqual((await raw.response(9)).result, {}, 'an unknown cancellation is ignored');
  raw.child.stdin.end();
  assert.deepEqual(await raw.exited, { code: 0, signal: null });
  for (const line of raw.lines) assert.equal(JSON.parse(line).jsonrpc, '2.0', 'only JSON-RPC on stdout');
}

async function batch() {
  step('a 2025-03-26 batch: one array of answers');
  const raw = rawServer(['--source', source]);
  await initializeRaw(raw, '2025-03-26');
  const from = raw.lines.length;
  await raw.send([{ jsonrpc: '2.0', id: 'a', method: 'ping' }, { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 'b', method: 'tools/call', params: { name: 'fork_list', arguments: { source } } }]);
  const answers = await raw.next((m) => Array.isArray(m), from);
  assert.deepEqual(answers.map((a) => a.id).sort(), ['a', 'b']);
  assert.equal(answers.find((a) => a.id === 'b').result.isError, false);
  raw.child.stdin.end();
  await raw.exited;
}

async function hostile() {
  step('a 100 MB line: refused as a parse error, without the server holding it');
  const raw = rawServer(['--source', source]);
  await initializeRaw(raw);
  const from = raw.lines.length;
  const before = await peakRssKib(raw.child.pid);
  const chunk = 'a'.repeat(1 << 20);
  for (let i = 0; i < 100; i++)
    await new Promise((resolve) => raw.child.stdin.write(chunk, resolve));
  await raw.send('');
  const refused = await raw.next((m) => m.error, from, 120000);
  assert.equal(refused.error.code, -32700);
  assert.match(refused.error.message, /larger than 16 MiB/);
  // Holding the line would take 100 MiB at least; the server holds at most 16 MiB of it. (The
  // sanitizer build's allocator keeps freed blocks for a while, hence the margin.)
  const growth = await peakRssKib(raw.child.pid) - before;
  assert.ok(growth < 80 * 1024, `the peak RSS grew by ${growth} KiB with a 100 MB line`);

  step('deep nesting: refused before parsing');
  await raw.send('['.repeat(200000) + ']'.repeat(200000));
  const deep = await raw.next((m) => m.error && /nested deeper/.test(m.error.message), from);
  assert.equal(deep.error.code, -32700);

  step('a flood of calls: each request gets one answer, the server stays up');
  const count = 3000;
  const floodFrom = raw.lines.length;
  let batchText = '';
  for (let i = 0; i < count; i++) {
    batchText += JSON.stringify(i % 3 === 0
      ? { jsonrpc: '2.0', id: `f${i}`, method: 'tools/call', params: { name: 'fork_list', arguments: { source } } }
      : { jsonrpc: '2.0', id: `f${i}`, method: 'ping' }) + '\n';
  }
  await new Promise((resolve) => raw.child.stdin.write(batchText, resolve));
  await raw.send({ jsonrpc: '2.0', id: 'after', method: 'ping' });
  await raw.response('after');
  const deadline = Date.now() + 120000;
  const answered = () => new Set(raw.lines.slice(floodFrom).map((l) => JSON.parse(l).id).filter((id) => `${id}`.startsWith('f')));
  while (answered().size < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  assert.equal(answered().size, count, 'every request of the flood was answered');
  const ids = raw.lines.slice(floodFrom).map((l) => JSON.parse(l).id).filter((id) => `${id}`.startsWith('f'));
  assert.equal(ids.length, count, 'and answered once');
  for (const line of raw.lines.slice(floodFrom)) {
    const m = JSON.parse(line);
    if (m.error) assert.equal(m.error.code, -32000, `only "busy" refusals: ${line}`);
  }
  raw.child.stdin.end();
  assert.deepEqual(await raw.exited, { code: 0, signal: null });
}

main(async () => {
  const s3 = s3Client();
  const create = new CreateBucketCommand({ Bucket: source });
  create.middlewareStack.add((next) => (args) => {
    args.request.headers['x-tigris-enable-snapshot'] = 'true';
    return next(args);
  }, { step: 'build' });
  await s3.send(create);
  await negotiation();
  await errorCodes();
  await batch();
  await hostile();
});
