// The Node peer of bench/og-http.sh: `GET /api/og-image?seed=…&quote=…&author=…`
// answered over node:http with a 1200x630 PNG made by @vercel/og (satori,
// then sharp when it imports, else resvg-wasm), the way a Next.js app
// renders its share images: afresh on every request. The card is
// bench/images/card.mjs, with the seed's DiceBear adventurer avatar.
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
import { card } from "../images/card.mjs";

const PORT = Number(process.env.PORT ?? 8080);
const WORKERS = Number(process.env.WORKERS ?? 2);
const DEFAULT_QUOTE = "Alone we can do so little; together we can do so much.";

let refusedFetches = 0;
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const url = String(input instanceof Request ? input.url : input);
  if (url.startsWith("data:")) return realFetch(input, init);
  refusedFetches += 1;
  if (process.env.PEER_DEBUG) console.error(`refused: ${url.slice(0, 200)}`);
  throw new Error(`the peer is offline: refused ${url.slice(0, 80)}`);
};

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
    const png = Buffer.from(await new ImageResponse(card(React.createElement, createAvatar(adventurer, { seed, size: 300 }).toString(), seed, quote, author), { width: 1200, height: 630 }).arrayBuffer());
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
