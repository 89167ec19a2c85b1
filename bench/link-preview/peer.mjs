// open-graph-scraper over the fixture corpus through its `html` option (no
// network), timed the same way as Plaza's corpus_bench example.
// Usage: node peer.mjs <scratch-dir-with-node_modules> <fixtures-dir> <seconds> <results.json> [max-bytes]
// With max-bytes, only pages up to that size (in bytes on disk) are timed.
// Pages are decoded to strings before timing starts (the peer takes text,
// not bytes), which favours the peer.
import { createRequire } from 'node:module';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [scratch, dir, seconds, out, maxBytesArg] = process.argv.slice(2);
const maxBytes = maxBytesArg ? Number(maxBytesArg) : Infinity;
const require = createRequire(join(scratch, 'package.json'));
const ogs = require('open-graph-scraper');
const ORIGIN = 'https://fixtures.example';

function charsetOf(bytes, contentType) {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return 'utf-8';
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  const header = /charset\s*=\s*["']?([\w-]+)/i.exec(contentType || '');
  if (header) return header[1];
  const head = Buffer.from(bytes.subarray(0, 65536)).toString('latin1');
  const meta = /<meta[^>]*charset\s*=\s*["']?\s*([\w-]+)/i.exec(head);
  if (meta) return meta[1];
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return 'utf-8';
  } catch {
    return 'windows-1252';
  }
}

const pages = readdirSync(dir)
  .filter((f) => f.endsWith('.html'))
  .sort()
  .map((file) => {
    const name = file.slice(0, -5);
    const bytes = readFileSync(join(dir, file));
    const expected = JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8'));
    const html = new TextDecoder(charsetOf(bytes, expected.content_type)).decode(bytes);
    return { name, html, size: bytes.length, url: `${ORIGIN}/pages/${name}.html` };
  });

const clean = (s) => (typeof s === 'string' ? s.replace(/\s+/g, ' ').trim() : '');

function mapResult(page, ogObject) {
  const image = ogObject.ogImage?.[0]?.url ?? ogObject.twitterImage?.[0]?.url;
  let absolute = null;
  if (image) {
    try {
      absolute = new URL(image.trim(), page.url).href;
    } catch {
      absolute = image;
    }
  }
  return {
    title: clean(ogObject.ogTitle ?? ogObject.twitterTitle),
    description: clean(ogObject.ogDescription ?? ogObject.twitterDescription),
    image: absolute,
  };
}

async function run(page) {
  try {
    const { result } = await ogs({ html: page.html });
    return result;
  } catch (err) {
    return { error: String(err) };
  }
}

const results = {};
for (const page of pages) results[page.name] = mapResult(page, await run(page));
writeFileSync(out, JSON.stringify(results, null, 2));

const timed = pages.filter((p) => p.size <= maxBytes);
const budget = Number(seconds) * 1000;
const started = performance.now();
let extracted = 0;
while (performance.now() - started < budget) {
  for (const page of timed) await run(page);
  extracted += timed.length;
}
const secs = (performance.now() - started) / 1000;
console.log(JSON.stringify({ pages: timed.length, extracted, seconds: secs, pages_per_sec: extracted / secs }));
