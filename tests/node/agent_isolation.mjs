// SPDX-License-Identifier: Apache-2.0
// Run by tests/e2e/agent_isolation.sh inside `tfork fork exec` (here, beside node_modules): @tigrisdata/storage with its
// configuration from the environment (TIGRIS_STORAGE_*; only path style is set in code, for
// the 127.0.0.1 endpoint) writes its own fork and is denied on the source and a sibling.
// Exit 0 only when all of that holds. Args: SOURCE SIBLING.
import { list, put } from '@tigrisdata/storage';

const [source, sibling] = process.argv.slice(2);
const own = process.env.TIGRIS_STORAGE_BUCKET;
const pathStyle = (bucket) => ({ config: bucket ? { forcePathStyle: true, bucket } : { forcePathStyle: true } });
console.log(`agent ${process.env.TFORK_AGENT_INDEX} in ${own} as ${process.env.TIGRIS_STORAGE_ACCESS_KEY_ID.slice(0, 8)}...`);
const wrote = await put('tigris.txt', 'written by @tigrisdata/storage', pathStyle());
if (wrote.error) { console.log(`own fork: put failed: ${wrote.error.message}`); process.exit(1); }
const listed = await list(pathStyle());
if (listed.error) { console.log(`own fork: list failed: ${listed.error.message}`); process.exit(1); }
for (const other of [source, sibling]) {
  const p = await put('tigris.txt', 'x', pathStyle(other));
  if (!p.error) { console.log(`LEAK: wrote into ${other}`); process.exit(1); }
  const l = await list(pathStyle(other));
  if (!l.error) { console.log(`LEAK: listed ${other}`); process.exit(1); }
  if (!/Access ?Denied/i.test(String(l.error.message ?? l.error))) {
    console.log(`unexpected error on ${other}: ${l.error.message}`);
    process.exit(1);
  }
}
console.log('isolated');
