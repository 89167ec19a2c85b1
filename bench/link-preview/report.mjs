// Prints the side-by-side table of bench/link-preview/run.sh.
// Usage: node report.mjs <fixtures-dir> <plaza.json> <plaza-line> <peer.json> <peer-line> <plaza-small-line> <peer-small-line>
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const [dir, plazaFile, plazaLine, peerFile, peerLine, plazaSmallLine, peerSmallLine] = process.argv.slice(2);
const plaza = JSON.parse(readFileSync(plazaFile, 'utf8'));
const peer = JSON.parse(readFileSync(peerFile, 'utf8'));
const plazaRate = JSON.parse(plazaLine);
const peerRate = JSON.parse(peerLine);
const plazaSmall = JSON.parse(plazaSmallLine);
const peerSmall = JSON.parse(peerSmallLine);
const ORIGIN = 'https://fixtures.example';
const FIELDS = ['title', 'description', 'image'];

const rows = [];
let plazaExpected = 0;
let comparable = 0;
let agreeing = 0;
let peerExpectedComparable = 0;
for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
  const name = file.slice(0, -5);
  const exp = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  const expected = {
    title: exp.title,
    description: exp.description,
    image: exp.image === null ? null : exp.image.replaceAll('{origin}', ORIGIN).replaceAll('{scheme}', 'https'),
  };
  const p = plaza[name] ?? {};
  const o = peer[name] ?? {};
  const same = (a, b) => FIELDS.every((f) => (a[f] ?? null) === (b[f] ?? null));
  const plazaOk = same(p, expected);
  const agree = same(p, o);
  plazaExpected += plazaOk ? 1 : 0;
  const isComparable = exp.peer === 'compare';
  if (isComparable) {
    comparable += 1;
    agreeing += agree ? 1 : 0;
    peerExpectedComparable += same(o, expected) ? 1 : 0;
  }
  const diff = FIELDS.filter((f) => (p[f] ?? null) !== (o[f] ?? null)).join(',');
  rows.push([name, plazaOk ? 'yes' : 'NO', agree ? 'agree' : `differ(${diff})`, isComparable ? 'compared' : `not compared: ${exp.peer}`]);
}

const pad = (s, n) => String(s).padEnd(n);
console.log(`${pad('page', 32)} ${pad('plaza=expected', 15)} ${pad('plaza vs peer', 40)} note`);
for (const r of rows) console.log(`${pad(r[0], 32)} ${pad(r[1], 15)} ${pad(r[2], 40)} ${r[3]}`);
console.log('');
const fmt = (n) => Math.round(n).toLocaleString('en-US');
console.log(`${pad('', 34)} ${pad('plaza-link-preview', 20)} open-graph-scraper 6.12.0`);
console.log(`${pad('pages in corpus', 34)} ${pad(plazaRate.pages, 20)} ${peerRate.pages}`);
console.log(`${pad('pages/s, whole corpus', 34)} ${pad(fmt(plazaRate.pages_per_sec), 20)} ${fmt(peerRate.pages_per_sec)}`);
console.log(`${pad('ratio, whole corpus', 34)} ${(plazaRate.pages_per_sec / peerRate.pages_per_sec).toFixed(1)}x`);
console.log(`${pad(`pages/s, ${plazaSmall.pages} pages <= 64 KiB`, 34)} ${pad(fmt(plazaSmall.pages_per_sec), 20)} ${fmt(peerSmall.pages_per_sec)}`);
console.log(`${pad('ratio, pages <= 64 KiB', 34)} ${(plazaSmall.pages_per_sec / peerSmall.pages_per_sec).toFixed(1)}x`);
console.log(`${pad('plaza matches expected', 34)} ${plazaExpected}/${rows.length}`);
console.log(`${pad('unambiguous pages compared', 34)} ${comparable}`);
console.log(`${pad('plaza/peer agree (title,desc,image)', 34)} ${agreeing}/${comparable}`);
console.log(`${pad('peer matches expected (compared)', 34)} ${peerExpectedComparable}/${comparable}`);
if (agreeing !== comparable) process.exitCode = 1;
