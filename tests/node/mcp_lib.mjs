// SPDX-License-Identifier: Apache-2.0
// Helpers for the tfork mcp end-to-end scripts (tests/e2e/mcp_*.sh): a recording proxy in
// front of `tfork serve` (what the MCP server sent, and with which key), an MCP client of the
// official TypeScript SDK over stdio or Streamable HTTP, and a raw line client for what the SDK
// would never send.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { env, step } from './e2e_lib.mjs';

export const TFORK = () => env('TFORK');

// Forwards every request to the server at `target` and records it: {method, url, key} with the
// access key id of its SigV4 Authorization (or presigned query).
export async function startRecordingProxy(target) {
  const seen = [];
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    const auth = req.headers.authorization ?? '';
    const url = new URL(req.url, 'http://x');
    const credential = /Credential=([^/]+)\//.exec(auth)?.[1] ??
      url.searchParams.get('X-Amz-Credential')?.split('/')[0] ?? null;
    seen.push({ method: req.method, url: req.url, key: credential });
    const forward = http.request({
      host: upstream.hostname, port: upstream.port, method: req.method, path: req.url,
      headers: req.headers,
    }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    seen,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

// The environment of a tfork mcp child: the test's, with `extra` on top.
export function childEnv(extra = {}) {
  const out = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) out[k] = v;
  return { ...out, ...extra };
}

// An SDK client connected to `tfork mcp ARGS...` over stdio. stderr is kept for messages.
export async function stdioClient(args, { extraEnv = {}, cwd } = {}) {
  const transport = new StdioClientTransport({
    command: TFORK(), args: ['mcp', ...args], env: childEnv(extraEnv), stderr: 'pipe', cwd,
  });
  const stderr = [];
  transport.stderr?.on('data', (chunk) => stderr.push(chunk.toString()));
  const client = new Client({ name: 'tfork-e2e', version: '1.0.0' });
  const logs = [];
  await client.connect(transport);
  client.setNotificationHandler(
    (await import('@modelcontextprotocol/sdk/types.js')).LoggingMessageNotificationSchema,
    (n) => logs.push(n.params));
  return { client, transport, stderr, logs };
}

// `tfork mcp --listen 127.0.0.1:0 ARGS...`: waits for its "listening on" line.
export async function startHttpServer(args, { extraEnv = {} } = {}) {
  const child = spawn(TFORK(), ['mcp', '--listen', '127.0.0.1:0', ...args], {
    env: childEnv(extraEnv), stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening on" line: ${stderr}`)), 20000);
    child.stderr.on('data', (chunk) => {
      stderr += chunk.toString();
      const m = /listening on (http:\/\/\S+\/mcp)/.exec(stderr);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.on('exit', (code) => reject(new Error(`tfork mcp --listen exited ${code}: ${stderr}`)));
  });
  return {
    url, child, stderr: () => stderr,
    stop: () => new Promise((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
      child.kill('SIGTERM');
    }),
  };
}

export async function httpClient(url, token) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'tfork-e2e-http', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

// The structured result of a tool call that must succeed.
export async function call(client, name, args = {}, options = {}) {
  const result = await client.callTool({ name, arguments: args }, undefined, options);
  assert.ok(!result.isError, `${name}: ${JSON.stringify(result.content)}`);
  assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent,
    `${name}: the text is the structured result`);
  return result.structuredContent;
}

// A tool call that must fail as a tool (isError) with this exit code; returns the text.
export async function failing(client, name, args, exit) {
  const result = await client.callTool({ name, arguments: args });
  assert.equal(result.isError, true, `${name} ${JSON.stringify(args)}: expected isError`);
  const text = result.content.map((c) => c.text).join('\n');
  assert.match(text, new RegExp(`exit ${exit}\\b`), `${name}: ${text}`);
  return text;
}

// A JSON-RPC error with this code from an SDK call.
export async function rpcError(promise, code, what) {
  try {
    await promise;
  } catch (e) {
    assert.equal(e.code, code, `${what}: expected JSON-RPC ${code}, got ${e.code} ${e.message}`);
    return e;
  }
  assert.fail(`${what}: expected JSON-RPC error ${code}`);
}

// A raw newline-delimited JSON-RPC client of `tfork mcp ARGS...`.
export function rawServer(args, { extraEnv = {} } = {}) {
  const child = spawn(TFORK(), ['mcp', ...args], {
    env: childEnv(extraEnv), stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines = [];
  const waiters = [];
  let stderr = '';
  child.stderr.on('data', (c) => { stderr += c.toString(); });
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    for (const w of [...waiters]) w();
  });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  child.stdin.on('error', () => {});
  return {
    child, lines, exited, stderr: () => stderr,
    send(message) {
      return new Promise((resolve) => {
        const text = typeof message === 'string' ? message : JSON.stringify(message);
        child.stdin.write(text + '\n', resolve);
      });
    },
    // The first message received (from `from` on) that satisfies `predicate`.
    async next(predicate, from = 0, timeoutMs = 60000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        for (let i = from; i < lines.length; i++) {
          const m = JSON.parse(lines[i]);
          if (predicate(m)) return m;
        }
        if (Date.now() > deadline) throw new Error(`no matching message; got ${lines.slice(-5).join('\n')}`);
        await new Promise((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 500);
        });
        waiters.length = 0;
      }
    },
    response(id) { return this.next((m) => m.id === id && ('result' in m || 'error' in m)); },
  };
}

export async function initializeRaw(raw, version = '2025-11-25') {
  await raw.send({ jsonrpc: '2.0', id: 'init', method: 'initialize',
    params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
  const answer = await raw.response('init');
  await raw.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return answer.result;
}

// Peak resident memory of a process, in KiB (VmHWM).
export async function peakRssKib(pid) {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+)/.exec(status)[1]);
}

export { step };
