// The push service of bench/notifications.sh: answers every Web Push POST
// to /push/<anything> with 201 and appends the time it arrived (Unix
// seconds) as a line to OUT; GET /health answers 200. It reads the body
// whole, as a push service would, and keeps nothing else.
//
//   PORT=9000 OUT=/tmp/pushes.txt node notifications-receiver.mjs

import { appendFileSync } from "node:fs";
import http from "node:http";

const PORT = Number(process.env.PORT ?? 9000);
const OUT = process.env.OUT ?? "pushes.txt";

http
  .createServer((request, response) => {
    if (request.method === "GET" && request.url === "/health") {
      response.writeHead(200).end("ok");
      return;
    }
    if (request.method !== "POST" || !request.url.startsWith("/push/")) {
      response.writeHead(404).end();
      return;
    }
    request.on("data", () => {});
    request.on("end", () => {
      appendFileSync(OUT, `${Date.now() / 1000}\n`);
      response.writeHead(201).end();
    });
  })
  .listen(PORT, "127.0.0.1");
