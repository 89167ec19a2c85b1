// The Node peer of bench/images/run.sh: DiceBear (adventurer) avatars and
// @vercel/og cards, measured the same way as Plaza's bench_images example:
// one image at a time, after a warm-up, on one event loop.
//
//   node peer.mjs [AVATARS] [PNGS]
//
// Prints one JSON object per measurement (wall and CPU seconds of the whole
// process, all its threads), and which rasteriser @vercel/og used (it uses
// sharp when `import("sharp")` succeeds, else resvg-wasm).

import { createAvatar } from "@dicebear/core";
import { adventurer } from "@dicebear/collection";
import { ImageResponse } from "@vercel/og";
import React from "react";
import { card } from "./card.mjs";

const avatars = Number(process.argv[2] ?? 2000);
const pngs = Number(process.argv[3] ?? 50);
const QUOTE = "Alone we can do so little; together we can do so much.";
const AUTHOR = "Helen Keller";

let rasteriser = "resvg-wasm (sharp could not be imported)";
try {
  const sharp = (await import("sharp")).default;
  rasteriser = `sharp ${sharp.versions.sharp} (libvips ${sharp.versions.vips}, librsvg ${sharp.versions.rsvg}); vips concurrency ${sharp.concurrency()}`;
} catch {
  // @vercel/og falls back to resvg-wasm in exactly this case.
}

function avatar(seed, size) {
  return createAvatar(adventurer, { seed, size }).toString();
}

function plazaCard(seed) {
  return card(React.createElement, avatar(seed, 300), seed, QUOTE, AUTHOR);
}

// Warm-up (JIT, font parsing, wasm and sharp initialisation).
for (let i = 0; i < 100; i++) avatar(`warm-${i}`, 200);
for (let i = 0; i < 3; i++) await new ImageResponse(plazaCard(`warm-${i}`), { width: 1200, height: 630 }).arrayBuffer();

let start = process.hrtime.bigint();
let cpuStart = process.cpuUsage();
let bytes = 0;
for (let i = 0; i < avatars; i++) bytes += avatar(`user-${i}`, 200).length;
let seconds = Number(process.hrtime.bigint() - start) / 1e9;
let cpu = process.cpuUsage(cpuStart);
console.log(
  JSON.stringify({
    name: "avatar_svg_200",
    count: avatars,
    seconds,
    per_second: avatars / seconds,
    avg_bytes: Math.round(bytes / avatars),
    cpu_seconds: (cpu.user + cpu.system) / 1e6,
  }),
);

start = process.hrtime.bigint();
cpuStart = process.cpuUsage();
bytes = 0;
for (let i = 0; i < pngs; i++) {
  const png = await new ImageResponse(plazaCard(`user-${i}`), { width: 1200, height: 630 }).arrayBuffer();
  bytes += png.byteLength;
}
seconds = Number(process.hrtime.bigint() - start) / 1e9;
cpu = process.cpuUsage(cpuStart);
console.log(
  JSON.stringify({
    name: "og_png_1200x630",
    count: pngs,
    seconds,
    per_second: pngs / seconds,
    avg_bytes: Math.round(bytes / pngs),
    cpu_seconds: (cpu.user + cpu.system) / 1e6,
    rasteriser,
  }),
);
