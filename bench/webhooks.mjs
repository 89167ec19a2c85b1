// The webhook receiver of bench/webhooks.sh: answers every POST with 200
// and appends "<Unix seconds> <X-Plaza-Delivery>" as a line to OUT (the
// delivery ids tell lost and repeated deliveries apart); GET /health
// answers 200. It reads each body whole, as a receiver would.
//
//   PORT=9000 OUT=/tmp/deliveries.txt node webhooks.mjs

import { appendFileSync } from "node:fs";
import http from "node:http";

const PORT = Number(process.env.PORT ?? 9000);
const OUT = process.env.OUT ?? "deliveries.txt";

http
  .createServer((request, response) => {
    if (request.method === "GET" && request.url === "/health") {
      response.writeHead(200).end("ok");
      return;
    }
    if (request.method !== "POST") {
      response.writeHead(404).end();
      return;
    }
    request.on("data", () => {});
    request.on("end", () => {
      const id = request.headers["x-plaza-delivery"] ?? "none";
      appendFileSync(OUT, `${Date.now() / 1000} ${id}\n`);
      response.writeHead(200).end();
    });
  })
  .listen(PORT, "127.0.0.1");
