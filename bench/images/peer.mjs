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

const avatars = Number(process.argv[2] ?? 2000);
const pngs = Number(process.argv[3] ?? 50);
const QUOTE = "Alone we can do so little; together we can do so much.";
const AUTHOR = "Helen Keller";
const PALETTE = ["#ff6b35", "#118ab2", "#06d6a0", "#f72585", "#7209b7", "#ffd60a", "#f77f00", "#d00000"];
const h = React.createElement;

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

// A card close to Plaza's: dark fill, a border, ~20 translucent shapes
// (discs, rings, squares, bars), the seed's avatar as a base64 SVG image in a
// circle, the quote wrapped in a 650 px column and the author.
function card(seed) {
  let state = 0;
  for (const c of seed) state = (state * 31 + c.charCodeAt(0)) >>> 0;
  const rnd = (n) => {
    state = (state * 1103515245 + 12345) >>> 0;
    return (state >>> 8) % n;
  };
  const shapes = [];
  for (let i = 0; i < 20; i++) {
    const colour = PALETTE[rnd(8)];
    const size = 30 + rnd(200);
    const kind = rnd(4);
    shapes.push(
      h("div", {
        key: i,
        style: {
          position: "absolute",
          left: rnd(1200) - 100,
          top: rnd(630) - 100,
          width: kind === 3 ? 600 : size,
          height: kind === 3 ? 6 : size,
          borderRadius: kind < 2 ? size : 0,
          background: kind === 1 ? "transparent" : colour,
          border: kind === 1 ? `4px solid ${colour}` : "none",
          opacity: 0.25,
          transform: `rotate(${rnd(90)}deg)`,
        },
      }),
    );
  }
  const avatarUri = `data:image/svg+xml;base64,${Buffer.from(avatar(seed, 300)).toString("base64")}`;
  return h(
    "div",
    {
      style: {
        width: 1200,
        height: 630,
        display: "flex",
        position: "relative",
        background: "#0b0d17",
        border: `16px solid ${PALETTE[rnd(8)]}`,
        borderRadius: 20,
        alignItems: "center",
        fontFamily: "geist",
      },
    },
    ...shapes,
    h("img", { src: avatarUri, width: 300, height: 300, style: { position: "absolute", left: 100, top: 149, borderRadius: 150 } }),
    h(
      "div",
      { style: { position: "absolute", left: 434, top: 74, width: 650, height: 450, display: "flex", flexDirection: "column", alignItems: "center", justifyContent: "center" } },
      h("div", { style: { color: "#f5f5fa", fontSize: 54, textAlign: "center", lineHeight: 1.3 } }, `“${QUOTE}”`),
      h("div", { style: { color: "#c9cbe0", fontSize: 34, marginTop: 40 } }, `— ${AUTHOR}`),
    ),
  );
}

// Warm-up (JIT, font parsing, wasm and sharp initialisation).
for (let i = 0; i < 100; i++) avatar(`warm-${i}`, 200);
for (let i = 0; i < 3; i++) await new ImageResponse(card(`warm-${i}`), { width: 1200, height: 630 }).arrayBuffer();

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
  const png = await new ImageResponse(card(`user-${i}`), { width: 1200, height: 630 }).arrayBuffer();
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
