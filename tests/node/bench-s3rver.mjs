// SPDX-License-Identifier: Apache-2.0
// s3rver (a Node.js fake S3 server, locked in package.json) for the side-by-side small-object
// benchmark of `scripts/bench`: listens on 127.0.0.1, a free port, stores under DIR, creates
// BUCKET, prints "port <n>" once ready and runs until killed. Its keys are S3RVER/S3RVER.
// Node 20 needs --openssl-legacy-provider (its continuation tokens use DES).
//
// usage: node --openssl-legacy-provider bench-s3rver.mjs DIR BUCKET
import S3rver from 's3rver';

const [directory, bucket] = process.argv.slice(2);
const server = new S3rver({
  address: '127.0.0.1', port: 0, directory, silent: true,
  configureBuckets: [{ name: bucket, configs: [] }],
});
const { port } = await server.run();
console.log(`port ${port}`);
