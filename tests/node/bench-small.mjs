// SPDX-License-Identifier: Apache-2.0
// Small-object throughput for `scripts/bench` (issue 9 §2): 4 KiB PUT, GET and a 100-key
// ListObjectsV2 page, CONCURRENCY requests in flight, every URL presigned beforehand (SigV4
// query signing, below) so that the client does no signing work while it is timed, sent with
// Node's raw http client over keep-alive connections. The same script measures any S3
// server (tfork serve, s3rver). Prints one JSON document.
//
// usage: node bench-small.mjs ENDPOINT ACCESS_KEY SECRET_KEY BUCKET OPS CONCURRENCY [URL_DIR]
// With URL_DIR, nothing is measured: OPS presigned PUT and GET paths (the same keys) are
// written to URL_DIR/put.txt and URL_DIR/get.txt, one a line, for wrk (bench-small.lua).
import { createHash, createHmac } from 'node:crypto';
import http from 'node:http';

const [endpoint, accessKey, secretKey, bucket, opsText, concurrencyText] = process.argv.slice(2);
const ops = Number(opsText ?? 5000);
const concurrency = Number(concurrencyText ?? 32);
const url = new URL(endpoint);
const host = url.host;

const encode = (text) =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const hmac = (key, text) => createHmac('sha256', key).update(text).digest();

// SigV4 presigned URL (path style, region auto, UNSIGNED-PAYLOAD, only host signed).
function presign(method, key, params = {}, expires = 3600) {
  const now = new Date();
  const amzDate = now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
  const date = amzDate.slice(0, 8);
  const scope = `${date}/auto/s3/aws4_request`;
  const path = `/${bucket}${key === undefined ? '' : '/' + key.split('/').map(encode).join('/')}`;
  const query = {
    ...params,
    'X-Amz-Algorithm': 'AWS4-HMAC-SHA256',
    'X-Amz-Credential': `${accessKey}/${scope}`,
    'X-Amz-Date': amzDate,
    'X-Amz-Expires': String(expires),
    'X-Amz-SignedHeaders': 'host',
  };
  const canonicalQuery = Object.keys(query).sort()
    .map((name) => `${encode(name)}=${encode(query[name])}`).join('&');
  const canonical = [method, path, canonicalQuery, `host:${host}\n`, 'host', 'UNSIGNED-PAYLOAD'].join('\n');
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope,
    createHash('sha256').update(canonical).digest('hex')].join('\n');
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${secretKey}`, date), 'auto'), 's3'), 'aws4_request');
  const signature = createHmac('sha256', signingKey).update(toSign).digest('hex');
  return `${path}?${canonicalQuery}&X-Amz-Signature=${signature}`;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
function send(method, path, body) {
  return new Promise((resolve, reject) => {
    const headers = body ? { 'content-length': body.length } : {};
    const request = http.request({ agent, host: url.hostname, port: url.port, method, path, headers }, (response) => {
      let bytes = 0;
      response.on('data', (chunk) => { bytes += chunk.length; });
      response.on('end', () => {
        if (response.statusCode !== 200) reject(new Error(`${method} ${path.slice(0, 80)}: HTTP ${response.statusCode}`));
        else resolve(bytes);
      });
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });
}

const stats = (samples, ms) => {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { n: sorted.length, per_s: sorted.length / (ms / 1000), p50_ms: at(0.5), p99_ms: at(0.99), max_ms: sorted.at(-1) };
};

// A keep-alive connection the server closed just as a request went out on it (ECONNRESET,
// EPIPE) is retried, at most 3 times, and counted: the count is part of the result.
let retried = 0;
async function sendRetrying(method, path, body) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send(method, path, body);
    } catch (error) {
      if (attempt >= 3 || !['ECONNRESET', 'EPIPE'].includes(error.code)) throw error;
      retried++;
    }
  }
}

async function phase(method, paths, body) {
  retried = 0;
  const latencies = new Array(paths.length);
  let next = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < paths.length) {
      const i = next++;
      const t = performance.now();
      await sendRetrying(method, paths[i], typeof body === 'function' ? body(i) : body);
      latencies[i] = performance.now() - t;
    }
  }));
  return { ...stats(latencies, performance.now() - start), retried };
}

const key = (i) => `small/${String(i).padStart(6, '0')}`;
// Every object has content of its own: a store that keeps identical content once (tfork serve
// does) must not be measured on a workload that is all duplicates.
const bodyOf = (i) => {
  const b = Buffer.alloc(4096, 'x');
  b.write(`object ${i} of run ${process.pid} at ${Date.now()}`);
  return b;
};
const body = bodyOf(0);
const lists = Math.max(1, Math.floor(ops / 10));
// All URLs first: nothing is signed while a phase is timed.
const puts = Array.from({ length: ops }, (_, i) => presign('PUT', key(i)));
const gets = Array.from({ length: ops }, (_, i) => presign('GET', key(i)));
const pages = Array.from({ length: lists }, (_, i) => presign('GET', undefined, {
  'list-type': '2', 'max-keys': '100', prefix: 'small/', 'start-after': key((i * 7919) % Math.max(1, ops - 100)),
}));

const urlDir = process.argv[8];
if (urlDir) {
  const { writeFileSync } = await import('node:fs');
  writeFileSync(`${urlDir}/put.txt`, `${puts.join('\n')}\n`);
  writeFileSync(`${urlDir}/get.txt`, `${gets.join('\n')}\n`);
  process.exit(0);
}

// A short warm-up (connections opened, caches filled), not counted.
await phase('PUT', puts.slice(0, Math.min(ops, 200)), body);
const result = { ops, concurrency, object_bytes: body.length };
result.put = await phase('PUT', puts, bodyOf);
result.get = await phase('GET', gets);
result.list = await phase('GET', pages);
agent.destroy();
console.log(JSON.stringify(result));
