// SPDX-License-Identifier: Apache-2.0
// scripts/bench section 7: the latency of a tools/call of `tfork mcp` against the same CLI
// command, and the server's memory idle and after many calls. A raw line client (no SDK), so
// that what is measured is the server. Prints one JSON document.
//   node bench-mcp.mjs TFORK SOURCE WORKDIR CALLS CREATE_RUNS
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const [tfork, source, work, callsArg, runsArg] = process.argv.slice(2);
const calls = Number(callsArg);
const runs = Number(runsArg);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p90 = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.9)];
const now = () => Number(process.hrtime.bigint()) / 1e6;

const server = spawn(tfork, ['mcp', '--source', source, '--manifest-dir', work],
  { stdio: ['pipe', 'pipe', 'inherit'] });
const waiting = new Map();
createInterface({ input: server.stdout }).on('line', (line) => {
  const message = JSON.parse(line);
  const resolve = waiting.get(message.id);
  if (resolve) { waiting.delete(message.id); resolve(message); }
});
let next = 0;
function request(method, params) {
  const id = ++next;
  return new Promise((resolve) => {
    waiting.set(id, resolve);
    server.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
  });
}
async function tool(name, args) {
  const t0 = now();
  const answer = await request('tools/call', { name, arguments: args });
  const ms = now() - t0;
  if (answer.error || answer.result.isError) throw new Error(`${name}: ${JSON.stringify(answer)}`);
  return { ms, result: answer.result.structuredContent };
}
const rss = () => {
  const status = readFileSync(`/proc/${server.pid}/status`, 'utf8');
  return { rss_kib: Number(/VmRSS:\s+(\d+)/.exec(status)[1]), hwm_kib: Number(/VmHWM:\s+(\d+)/.exec(status)[1]) };
};
const cli = (args) => {
  const t0 = now();
  const r = spawnSync(tfork, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.status !== 0) throw new Error(`tfork ${args.join(' ')}: ${r.stderr}`);
  return now() - t0;
};
// The request's own time as `tfork -vv` logs it ("HEAD ... -> 200 (N ms, attempt 1)").
const cliRequestMs = (args) => {
  const r = spawnSync(tfork, ['-vv', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  return Number(/-> \d+ \((\d+) ms/.exec(r.stderr.toString())?.[1]);
};

await request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
server.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
const fork = (await tool('fork_create', { source, count: 1, prefix: 'bench-head', keys: 'none' })).result.forks[0].bucket;
await tool('fork_head', { buckets: [fork] });
const idle = rss();

const mcpHead = [];
const cliHead = [];
const cliVersion = [];
const cliRequest = [];
for (let i = 0; i < calls; i++) {
  mcpHead.push((await tool('fork_head', { buckets: [fork] })).ms);
  if (i < Math.min(calls, 100)) {
    cliHead.push(cli(['fork', 'head', fork]));
    cliVersion.push(cli(['version']));
    cliRequest.push(cliRequestMs(['fork', 'head', fork]));
  }
}
const mcpCreate = [];
const cliCreate = [];
for (let run = 0; run < runs; run++) {
  const made = await tool('fork_create', { source, count: 8, prefix: `bench-m${run}` });
  mcpCreate.push(made.ms);
  await tool('fork_teardown', { forks: made.result.forks.map((f) => f.bucket), confirm: true });
  cliCreate.push(cli(['fork', 'create', source, '-n', '8', '--prefix', `bench-c${run}`,
    '--manifest', `${work}/bench-c${run}.json`, '-q']));
  cli(['teardown', '--manifest', `${work}/bench-c${run}.json`, '-q']);
}
for (let i = mcpHead.length; i < 1000; i++) await tool('fork_head', { buckets: [fork] });
const after = rss();
for (let i = 0; i < 1000; i++) await tool('fork_head', { buckets: [fork] });
const later = rss();
server.stdin.end();
await new Promise((resolve) => server.on('exit', resolve));

console.log(JSON.stringify({
  calls,
  runs,
  fork_head: { mcp_median_ms: median(mcpHead), mcp_p90_ms: p90(mcpHead),
    cli_median_ms: median(cliHead), version_median_ms: median(cliVersion),
    cli_request_median_ms: median(cliRequest) },
  fork_create_8: { mcp_median_ms: median(mcpCreate), cli_median_ms: median(cliCreate) },
  rss: { idle, after_1000_calls: after, after_2000_calls: later },
}));
