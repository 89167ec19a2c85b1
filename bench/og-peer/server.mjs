// The Node peer of bench/og-http.sh: `GET /api/og-image?seed=…&quote=…&author=…`
// answered over node:http with a 1200x630 PNG made by @vercel/og (satori,
// then sharp when it imports, else resvg-wasm), the way a Next.js app
// renders its share images: afresh on every request. The card follows
// Plaza's layout: dark fill, a coloured border, ~20 translucent seeded
// shapes, the seed's DiceBear adventurer avatar in a circle on the left,
// the quote wrapped in a 650 px column on the right and the author below.
//
//   PORT=8080 WORKERS=2 node server.mjs
//
// WORKERS processes share the port (node:cluster); 0 serves from this
// process alone. Nothing is fetched from the network: any fetch (satori
// asks for fonts or emoji it does not have) is refused and counted, and
// the count is printed on SIGTERM; `data:` URLs (its own wasm) are read.

import cluster from "node:cluster";
import http from "node:http";
import { createAvatar } from "@dicebear/core";
import { adventurer } from "@dicebear/collection";
import { ImageResponse } from "@vercel/og";
import React from "react";

const PORT = Number(process.env.PORT ?? 8080);
const WORKERS = Number(process.env.WORKERS ?? 2);
const PALETTE = ["#ff6b35", "#118ab2", "#06d6a0", "#f72585", "#7209b7", "#ffd60a", "#f77f00", "#d00000"];
const DEFAULT_QUOTE = "Alone we can do so little; together we can do so much.";
const h = React.createElement;

let refusedFetches = 0;
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const url = String(input instanceof Request ? input.url : input);
  if (url.startsWith("data:")) return realFetch(input, init);
  refusedFetches += 1;
  if (process.env.PEER_DEBUG) console.error(`refused: ${url.slice(0, 200)}`);
  throw new Error(`the peer is offline: refused ${url.slice(0, 80)}`);
};

function card(seed, quote, author) {
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
  const avatar = createAvatar(adventurer, { seed, size: 300 }).toString();
  const avatarUri = `data:image/svg+xml;base64,${Buffer.from(avatar).toString("base64")}`;
  const text = [h("div", { key: "q", style: { color: "#f5f5fa", fontSize: 54, textAlign: "center", lineHeight: 1.3 } }, `“${quote}”`)];
  if (author) text.push(h("div", { key: "a", style: { color: "#c9cbe0", fontSize: 34, marginTop: 40 } }, `— ${author}`));
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
      },
    },
    ...shapes,
    h("img", { src: avatarUri, width: 300, height: 300, style: { position: "absolute", left: 100, top: 149, borderRadius: 150 } }),
    h(
      "div",
      { style: { position: "absolute", left: 434, top: 74, width: 650, height: 450, display: "flex", flexDirection: "column", alignItems: "center", justifyContent: "center" } },
      ...text,
    ),
  );
}

async function answer(request, response) {
  const url = new URL(request.url, "http://peer");
  if (url.pathname !== "/api/og-image") {
    response.writeHead(404).end();
    return;
  }
  const seed = url.searchParams.get("seed") || "plaza";
  const quote = (url.searchParams.get("quote") || DEFAULT_QUOTE).slice(0, 500);
  const author = (url.searchParams.get("author") || "").slice(0, 100);
  try {
    const png = Buffer.from(await new ImageResponse(card(seed, quote, author), { width: 1200, height: 630 }).arrayBuffer());
    response.writeHead(200, { "content-type": "image/png", "content-length": png.length });
    response.end(png);
  } catch (error) {
    response.writeHead(500, { "content-type": "text/plain" }).end(String(error));
  }
}

function serve() {
  const server = http.createServer((request, response) => void answer(request, response));
  server.keepAliveTimeout = 65_000;
  server.listen(PORT, "127.0.0.1");
  process.on("SIGTERM", () => {
    if (refusedFetches > 0) console.error(`pid ${process.pid}: ${refusedFetches} fetches refused`);
    process.exit(0);
  });
}

if (cluster.isPrimary) {
  let rasteriser = "resvg-wasm (sharp could not be imported)";
  try {
    const sharp = (await import("sharp")).default;
    rasteriser = `sharp ${sharp.versions.sharp} (libvips ${sharp.versions.vips})`;
  } catch {
    // @vercel/og falls back to resvg-wasm in exactly this case.
  }
  console.error(`@vercel/og rasterises with ${rasteriser}`);
}

if (WORKERS > 0 && cluster.isPrimary) {
  for (let i = 0; i < WORKERS; i++) cluster.fork();
  process.on("SIGTERM", () => {
    for (const worker of Object.values(cluster.workers)) worker.process.kill("SIGTERM");
    process.exit(0);
  });
} else {
  serve();
}
