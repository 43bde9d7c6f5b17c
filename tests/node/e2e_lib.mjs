// SPDX-License-Identifier: Apache-2.0
// Shared helpers for the JavaScript end-to-end scripts run by tests/e2e/*.sh against a real
// `tfork serve`. The server's environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY) comes from the printed `export` lines.
import assert from 'node:assert/strict';
import path from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';

export const SCRIPT = path.basename(process.argv[1] ?? 'node');

export function step(msg) {
  process.stderr.write(`== ${SCRIPT}: ${msg}\n`);
}

export function env(name) {
  const v = process.env[name];
  if (!v) {
    process.stderr.write(`FAIL ${SCRIPT}: ${name} is not set (run through tests/e2e)\n`);
    process.exit(1);
  }
  return v;
}

export const endpoint = () => env('AWS_ENDPOINT_URL');
export const rootCreds = () => ({
  accessKeyId: env('AWS_ACCESS_KEY_ID'),
  secretAccessKey: env('AWS_SECRET_ACCESS_KEY'),
});

// Config for @tigrisdata/storage and @tigrisdata/iam: path style against 127.0.0.1, the IAM
// API served on the same port.
export function tigrisConfig(creds = rootCreds(), bucket) {
  const c = {
    ...creds,
    endpoint: endpoint(),
    iamEndpoint: endpoint(),
    forcePathStyle: true,
  };
  if (bucket) c.bucket = bucket;
  return c;
}

export function s3Client(creds = rootCreds()) {
  return new S3Client({
    endpoint: endpoint(),
    region: 'auto',
    forcePathStyle: true,
    credentials: creds,
    maxAttempts: 1,
  });
}

// The data of a Tigris SDK {data, error} response, or a failed assertion naming `what`.
export function ok(what, res) {
  if (res?.error) {
    assert.fail(`${what}: ${res.error.message ?? res.error}`);
  }
  return res.data;
}

// A Tigris SDK call that must fail; returns the error message.
export function bad(what, res, pattern) {
  assert.ok(res?.error, `${what}: expected an error, got data ${JSON.stringify(res?.data)}`);
  const msg = String(res.error.message ?? res.error);
  if (pattern) assert.match(msg, pattern, `${what}: unexpected error message`);
  return msg;
}

// An AWS SDK call that must fail with the given HTTP status (and error name when given).
export async function rejects(what, promise, status, name) {
  try {
    await promise;
  } catch (e) {
    const got = e?.$metadata?.httpStatusCode;
    assert.equal(got, status, `${what}: expected HTTP ${status}, got ${got} (${e?.name}: ${e?.message})`);
    if (name) assert.equal(e.name, name, `${what}: expected error ${name}, got ${e.name} (${e.message})`);
    return e;
  }
  assert.fail(`${what}: expected HTTP ${status}${name ? ` ${name}` : ''}, but the call succeeded`);
}

export async function bodyString(res) {
  return res.Body.transformToString();
}

export function utf8Sorted(keys) {
  return [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

// Run the test body; a failure prints the assertion and exits 1.
export async function main(fn) {
  try {
    await fn();
    step('PASS');
  } catch (e) {
    process.stderr.write(`FAIL ${SCRIPT}: ${e?.stack ?? e}\n`);
    process.exit(1);
  }
}
