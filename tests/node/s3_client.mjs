// SPDX-License-Identifier: Apache-2.0
// @aws-sdk/client-s3 (v3, with the January 2025 checksum defaults) against `tfork serve`:
// streaming upload (aws-chunked + trailer checksum), regular put with CRC32, explicit
// SHA256/CRC32C checksums, a wrong checksum, DeleteObjects with a checksum and no
// Content-MD5, the ListObjectsV2 paginator, multipart upload by hand, copy and range reads.
// Every request's final headers are captured so the test proves the SDK really sent the
// wire shape under test.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutObjectCommand,
  UploadPartCommand,
  paginateListObjectsV2,
} from '@aws-sdk/client-s3';
import { bodyString, main, rejects, s3Client, step, utf8Sorted } from './e2e_lib.mjs';

const MiB = 1024 * 1024;
const B = process.argv[2] ?? 'node-s3';

function captureRequests(client) {
  const seen = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const headers = {};
      for (const [k, v] of Object.entries(args.request.headers ?? {})) headers[k.toLowerCase()] = v;
      seen.push({ op: context.commandName, headers });
      return next(args);
    },
    { step: 'deserialize', name: 'e2eCaptureFinalRequest', priority: 'low' },
  );
  return seen;
}

// A file stream: the SDK sizes it (fs.stat) and sends it aws-chunked with a trailer checksum,
// exactly as it uploads any file a user hands it. (A stream of unknown length is refused by
// the SDK itself.)
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), 'tfork-node-s3-'));
process.on('exit', () => fs.rmSync(TMP, { recursive: true, force: true }));
function fileStream(name, data) {
  const file = path.join(TMP, name);
  fs.writeFileSync(file, data);
  return fs.createReadStream(file, { highWaterMark: 64 * 1024 });
}

const lastRequest = (seen, op) => [...seen].reverse().find((r) => r.op === op)?.headers ?? {};

async function allKeys(s3, prefix, pageSize = 1000) {
  const keys = [];
  for await (const page of paginateListObjectsV2({ client: s3, pageSize }, { Bucket: B, Prefix: prefix })) {
    keys.push(...(page.Contents ?? []).map((o) => o.Key));
  }
  return keys;
}

await main(async () => {
  const s3 = s3Client();
  const seen = captureRequests(s3);

  step(`CreateBucket ${B}`);
  const created = await s3.send(new CreateBucketCommand({ Bucket: B }));
  assert.equal(created.Location, `/${B}`);
  await s3.send(new HeadBucketCommand({ Bucket: B }));

  step('regular PutObject: signed body hash + x-amz-checksum-crc32');
  const plain = 'plain body for crc32';
  const put = await s3.send(new PutObjectCommand({ Bucket: B, Key: 'plain.txt', Body: plain }));
  let h = lastRequest(seen, 'PutObjectCommand');
  assert.match(h['x-amz-content-sha256'], /^[0-9a-f]{64}$/, 'regular put signs the body hash');
  assert.ok(h['x-amz-checksum-crc32'], 'regular put carries x-amz-checksum-crc32');
  assert.equal(put.ETag, `"${crypto.createHash('md5').update(plain).digest('hex')}"`);
  const got = await s3.send(new GetObjectCommand({ Bucket: B, Key: 'plain.txt' }));
  assert.equal(await bodyString(got), plain);

  step('streaming PutObject: aws-chunked, STREAMING-UNSIGNED-PAYLOAD-TRAILER, crc32 trailer');
  await s3.send(new PutObjectCommand({
    Bucket: B, Key: 'stream/hello.txt',
    Body: fileStream('hello.txt', 'hello stream'),
  }));
  h = lastRequest(seen, 'PutObjectCommand');
  assert.equal(h['x-amz-content-sha256'], 'STREAMING-UNSIGNED-PAYLOAD-TRAILER');
  assert.match(h['content-encoding'] ?? '', /aws-chunked/);
  assert.equal(h['x-amz-trailer'], 'x-amz-checksum-crc32');
  let head = await s3.send(new HeadObjectCommand({ Bucket: B, Key: 'stream/hello.txt' }));
  assert.equal(head.ContentLength, 12, 'stored length is the decoded length, not the aws-chunked framing');
  assert.equal(head.ContentEncoding, undefined, 'aws-chunked must not be stored as the Content-Encoding');
  assert.equal(await bodyString(await s3.send(new GetObjectCommand({ Bucket: B, Key: 'stream/hello.txt' }))), 'hello stream');

  assert.equal(h['x-amz-decoded-content-length'], '12');

  step('streaming PutObject of 3 MiB (many aws-chunked chunks)');
  const big = crypto.randomBytes(3 * MiB + 123);
  await s3.send(new PutObjectCommand({ Bucket: B, Key: 'stream/big.bin', Body: fileStream('big.bin', big) }));
  assert.equal(lastRequest(seen, 'PutObjectCommand')['content-encoding'], 'aws-chunked');
  const bigBack = Buffer.from(await (await s3.send(new GetObjectCommand({ Bucket: B, Key: 'stream/big.bin' }))).Body.transformToByteArray());
  assert.equal(crypto.createHash('sha256').update(bigBack).digest('hex'), crypto.createHash('sha256').update(big).digest('hex'));

  step('explicit SHA256 and CRC32C checksums');
  for (const algo of ['SHA256', 'CRC32C', 'SHA1']) {
    const key = `checksum/${algo}.txt`;
    const r = await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: `body for ${algo}`, ChecksumAlgorithm: algo }));
    h = lastRequest(seen, 'PutObjectCommand');
    assert.ok(h[`x-amz-checksum-${algo.toLowerCase()}`], `${algo} header sent`);
    assert.ok(r.ETag);
    assert.equal(await bodyString(await s3.send(new GetObjectCommand({ Bucket: B, Key: key }))), `body for ${algo}`);
  }
  step('streaming upload with a SHA256 trailer');
  await s3.send(new PutObjectCommand({
    Bucket: B, Key: 'stream/sha256.txt', ChecksumAlgorithm: 'SHA256',
    Body: fileStream('sha256.txt', 'sha256 trailer'),
  }));
  assert.equal(lastRequest(seen, 'PutObjectCommand')['x-amz-trailer'], 'x-amz-checksum-sha256');
  assert.equal(await bodyString(await s3.send(new GetObjectCommand({ Bucket: B, Key: 'stream/sha256.txt' }))), 'sha256 trailer');

  step('a wrong x-amz-checksum-crc32 is refused (400) and stores nothing');
  const e = await rejects('wrong crc32', s3.send(new PutObjectCommand({
    Bucket: B, Key: 'checksum/wrong.txt', Body: 'some body', ChecksumCRC32: 'AAAAAA==',
  })), 400);
  assert.ok(['BadDigest', 'InvalidRequest', 'XAmzContentChecksumMismatch'].includes(e.name), `wrong checksum error name ${e.name}`);
  await rejects('head after wrong crc32', s3.send(new HeadObjectCommand({ Bucket: B, Key: 'checksum/wrong.txt' })), 404);

  step('awkward keys through the SDK');
  const awkward = ['a b+c/ü%.txt', 'x/y/z/100%+done', 'sp ace/ta=b&c', "quote'paren(1)!*.txt"];
  for (const key of awkward) {
    await s3.send(new PutObjectCommand({ Bucket: B, Key: key, Body: key }));
    assert.equal(await bodyString(await s3.send(new GetObjectCommand({ Bucket: B, Key: key }))), key);
  }

  step('paginated ListObjectsV2 (page size 7) over 30 keys');
  const keys = [];
  for (let i = 0; i < 30; i++) keys.push(`page/${String(i).padStart(2, '0')}${i % 4 === 0 ? ' +%' : ''}`);
  await Promise.all(keys.map((k) => s3.send(new PutObjectCommand({ Bucket: B, Key: k, Body: k }))));
  let pages = 0;
  const listed = [];
  for await (const page of paginateListObjectsV2({ client: s3, pageSize: 7 }, { Bucket: B, Prefix: 'page/' })) {
    pages++;
    assert.ok(page.KeyCount <= 7, `page of ${page.KeyCount} keys`);
    listed.push(...(page.Contents ?? []).map((o) => o.Key));
  }
  assert.equal(pages, 5, 'pages for 30 keys at 7 per page');
  assert.deepEqual(listed, utf8Sorted(keys));
  const delimited = await s3.send(new ListObjectsV2Command({ Bucket: B, Delimiter: '/' }));
  assert.deepEqual((delimited.CommonPrefixes ?? []).map((p) => p.Prefix),
    utf8Sorted(['a b+c/', 'checksum/', 'page/', 'sp ace/', 'stream/', 'x/']));
  assert.deepEqual((delimited.Contents ?? []).map((o) => o.Key), utf8Sorted(['plain.txt', "quote'paren(1)!*.txt"]));

  step('DeleteObjects: checksum header, no Content-MD5');
  const del = await s3.send(new DeleteObjectsCommand({
    Bucket: B,
    Delete: { Objects: keys.slice(0, 10).map((Key) => ({ Key })).concat([{ Key: 'page/never-existed' }]) },
  }));
  h = lastRequest(seen, 'DeleteObjectsCommand');
  assert.equal(h['content-md5'], undefined, 'the SDK sent no Content-MD5');
  assert.ok(Object.keys(h).some((k) => k.startsWith('x-amz-checksum-')), 'the SDK sent an x-amz-checksum-* header');
  assert.equal((del.Deleted ?? []).length, 11);
  assert.equal((del.Errors ?? []).length, 0);
  assert.deepEqual(await allKeys(s3, 'page/'), utf8Sorted(keys.slice(10)));

  step('multipart: CreateMultipartUpload, UploadPart x3, ListParts, CompleteMultipartUpload');
  const mpKey = 'multipart/by hand+ü.bin';
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: B, Key: mpKey, ContentType: 'application/x-mp' }));
  assert.ok(UploadId);
  const parts = [crypto.randomBytes(5 * MiB), crypto.randomBytes(5 * MiB), Buffer.from('last part')];
  const done = [];
  for (let i = 0; i < parts.length; i++) {
    const r = await s3.send(new UploadPartCommand({ Bucket: B, Key: mpKey, UploadId, PartNumber: i + 1, Body: parts[i] }));
    assert.equal(r.ETag, `"${crypto.createHash('md5').update(parts[i]).digest('hex')}"`, `part ${i + 1} ETag`);
    const p = { PartNumber: i + 1, ETag: r.ETag };
    if (r.ChecksumCRC32) p.ChecksumCRC32 = r.ChecksumCRC32;
    done.push(p);
  }
  const lp = await s3.send(new ListPartsCommand({ Bucket: B, Key: mpKey, UploadId }));
  assert.deepEqual((lp.Parts ?? []).map((p) => p.Size), parts.map((p) => p.length));
  const completed = await s3.send(new CompleteMultipartUploadCommand({ Bucket: B, Key: mpKey, UploadId, MultipartUpload: { Parts: done } }));
  const md5s = Buffer.concat(parts.map((p) => crypto.createHash('md5').update(p).digest()));
  assert.equal(completed.ETag, `"${crypto.createHash('md5').update(md5s).digest('hex')}-3"`);
  head = await s3.send(new HeadObjectCommand({ Bucket: B, Key: mpKey }));
  assert.equal(head.ContentLength, 10 * MiB + 9);
  assert.equal(head.ContentType, 'application/x-mp');
  const mpBack = Buffer.from(await (await s3.send(new GetObjectCommand({ Bucket: B, Key: mpKey }))).Body.transformToByteArray());
  assert.ok(mpBack.equals(Buffer.concat(parts)), 'multipart object round trip');
  const range = await s3.send(new GetObjectCommand({ Bucket: B, Key: mpKey, Range: `bytes=${5 * MiB - 4}-${5 * MiB + 3}` }));
  assert.equal(range.ContentRange, `bytes ${5 * MiB - 4}-${5 * MiB + 3}/${10 * MiB + 9}`);
  assert.ok(Buffer.from(await range.Body.transformToByteArray()).equals(Buffer.concat(parts).subarray(5 * MiB - 4, 5 * MiB + 4)));

  step('CopyObject with awkward keys');
  await s3.send(new CopyObjectCommand({ Bucket: B, Key: 'copy/of awkward+.txt', CopySource: `${B}/${encodeURIComponent('a b+c/ü%.txt')}` }));
  assert.equal(await bodyString(await s3.send(new GetObjectCommand({ Bucket: B, Key: 'copy/of awkward+.txt' }))), 'a b+c/ü%.txt');

  step('errors: NoSuchKey, NoSuchBucket, BucketNotEmpty');
  await rejects('missing key', s3.send(new GetObjectCommand({ Bucket: B, Key: 'nope' })), 404, 'NoSuchKey');
  await rejects('missing bucket', s3.send(new GetObjectCommand({ Bucket: `${B}-missing`, Key: 'x' })), 404, 'NoSuchBucket');
  await rejects('non-empty bucket', s3.send(new DeleteBucketCommand({ Bucket: B })), 409, 'BucketNotEmpty');

  step('empty the bucket with DeleteObjects pages and delete it');
  let all = await allKeys(s3, '');
  while (all.length) {
    await s3.send(new DeleteObjectsCommand({ Bucket: B, Delete: { Objects: all.splice(0, 1000).map((Key) => ({ Key })), Quiet: true } }));
  }
  assert.deepEqual(await allKeys(s3, ''), []);
  await s3.send(new DeleteObjectCommand({ Bucket: B, Key: 'already-gone' }));
  await s3.send(new DeleteBucketCommand({ Bucket: B }));
  await rejects('deleted bucket', s3.send(new HeadBucketCommand({ Bucket: B })), 404);
});
