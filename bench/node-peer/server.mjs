// The Node peer of bench/public-reads.sh: Plaza's anonymous public reads
// written the way a Node app on the same PostgreSQL schema would, with
// node:http and postgres.js, rendered on every request:
//   GET /api/posts?limit=&offset=          the page and its total
//   GET /api/search/posts?q=&limit=&offset= full-text search, ranked and
//                                           highlighted
//   GET /api/posts/{id}/replies?limit=&cursor= a page of a thread in path
//                                           order (bench/conversations.sh)
// Both answer the JSON shape Plaza answers. The list's total comes from the
// `post_counts` counters, as Plaza's does; the search ranks the newest 200
// matches by ts_rank and highlights title and snippet here, as Plaza does.
//
//   PORT=8080 WORKERS=2 DATABASE_URL=postgres://… node server.mjs
//
// WORKERS processes share the port (node:cluster), each with a pool of
// POOL connections (10).

import cluster from "node:cluster";
import http from "node:http";
import postgres from "postgres";

const PORT = Number(process.env.PORT ?? 8080);
const WORKERS = Number(process.env.WORKERS ?? 1);
const POOL = Number(process.env.POOL ?? 10);
const PUBLIC = "p.published = TRUE AND p.moderation <> 'hidden'";
const SEARCH_WINDOW = 200;
const SNIPPET_WORDS = 24;

function send(response, status, body) {
  const text = JSON.stringify(body);
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  response.end(text);
}

class Invalid extends Error {}
class NotFound extends Error {}

// limit 1 to 100 (default 20) and offset 0 or more, as Plaza checks them.
function page(params) {
  const limit = params.has("limit") ? Number(params.get("limit")) : 20;
  const offset = params.has("offset") ? Number(params.get("offset")) : 0;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new Invalid("limit must be a whole number from 1 to 100");
  if (!Number.isInteger(offset) || offset < 0) throw new Invalid("offset must be a whole number from 0");
  return { limit, offset };
}

// Milliseconds as RFC 3339 in UTC, without trailing zeros of the fraction.
function rfc3339(millis) {
  return new Date(Number(millis)).toISOString().replace(/\.?0+Z$/, "Z");
}

function tags(text) {
  return text.split(" ").filter((tag) => tag !== "");
}

function postView(row) {
  return {
    id: String(row.id),
    title: row.title,
    content: row.content,
    author_id: String(row.author_id),
    created_at: rfc3339(row.created_at),
    updated_at: rfc3339(row.updated_at),
    published: row.published,
    tags: tags(row.tags),
  };
}

async function listPosts(sql, params) {
  const { limit, offset } = page(params);
  const [rows, [{ total }]] = await Promise.all([
    sql`SELECT p.id, p.author_id, p.title, p.content, p.tags, p.published, p.created_at, p.updated_at
        FROM posts p WHERE ${sql.unsafe(PUBLIC)}
        ORDER BY p.created_at DESC, p.id DESC LIMIT ${limit} OFFSET ${offset}`,
    sql`SELECT CAST(COALESCE(SUM(total), 0) AS BIGINT) AS total FROM post_counts
        WHERE scope IN ('published:none', 'published:flagged')`,
  ]);
  const count = Number(total);
  return {
    posts: rows.map(postView),
    pagination: { total: count, limit, offset, hasMore: offset + limit < count },
  };
}

const WORD = /[\p{L}\p{N}]/u;

// Byte-free word ranges of `text`: runs of letters and digits.
function wordRanges(text) {
  const ranges = [];
  let start = -1;
  for (let i = 0; i <= text.length; i++) {
    const inWord = i < text.length && WORD.test(text[i]);
    if (inWord && start < 0) start = i;
    if (!inWord && start >= 0) {
      ranges.push([start, i]);
      start = -1;
    }
  }
  return ranges;
}

function escape(text) {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

class Terms {
  constructor(query) {
    this.words = query
      .split(/[^\p{L}\p{N}]+/u)
      .filter((word) => word !== "")
      .map((word) => word.toLowerCase())
      .slice(0, 12);
    const last = this.words.at(-1);
    this.last = last;
    this.typing = last !== undefined && [...last].length >= 2 && !/\s$/u.test(query);
    this.exact = query.trim().toLowerCase();
  }

  prefixFirst() {
    return this.typing && [...this.last].length <= 3;
  }

  tsquery(prefix) {
    return this.words.map((word) => `'${word}'${prefix && word === this.last ? ":*" : ""}`).join(" & ");
  }

  matches(token, prefix) {
    const lower = token.toLowerCase();
    return this.words.some((word) => lower === word || (prefix && word === this.last && lower.startsWith(word)));
  }
}

function marked(text, words, from, to, terms, prefix) {
  let html = "";
  let at = from;
  for (const [start, end] of words) {
    if (start < from || end > to) continue;
    if (terms.matches(text.slice(start, end), prefix)) {
      html += `${escape(text.slice(at, start))}<mark>${escape(text.slice(start, end))}</mark>`;
      at = end;
    }
  }
  return html + escape(text.slice(at, to));
}

function snippet(text, terms, prefix) {
  const words = wordRanges(text);
  if (words.length <= SNIPPET_WORDS) return marked(text, words, 0, text.length, terms, prefix);
  const found = words.findIndex(([start, end]) => terms.matches(text.slice(start, end), prefix));
  const first = Math.min(Math.max((found < 0 ? 0 : found) - 3, 0), words.length - SNIPPET_WORDS);
  const last = first + SNIPPET_WORDS;
  const from = first === 0 ? 0 : words[first][0];
  const to = last === words.length ? text.length : words[last - 1][1];
  return (from > 0 ? "…" : "") + marked(text, words, from, to, terms, prefix) + (to < text.length ? "…" : "");
}

async function searchOnce(sql, terms, limit, offset, prefix) {
  const tsquery = terms.tsquery(prefix);
  return sql`
    WITH hits AS (
      SELECT p.id, lower(p.title) = ${terms.exact} AS exact,
        CAST(ts_rank(p.search_vector, to_tsquery('simple', ${tsquery})) AS DOUBLE PRECISION) AS score
      FROM posts p WHERE p.search_vector @@ to_tsquery('simple', ${tsquery}) AND ${sql.unsafe(PUBLIC)}
      ORDER BY p.id DESC LIMIT ${SEARCH_WINDOW}),
    page AS (SELECT id, exact, score FROM hits ORDER BY exact DESC, score DESC, id DESC LIMIT ${limit + 1} OFFSET ${offset})
    SELECT p.id, p.author_id, p.title, p.content, p.tags, p.published, p.created_at, p.updated_at,
      page.score, (SELECT COUNT(*) FROM hits) AS candidates
    FROM page JOIN posts p ON p.id = page.id
    ORDER BY page.exact DESC, page.score DESC, page.id DESC`;
}

async function searchPosts(sql, params) {
  const q = params.get("q");
  if (q === null || q.trim() === "" || [...q].length > 200 || /[\r\n]/.test(q)) throw new Invalid("q must be 1 to 200 characters on one line");
  const { limit: asked, offset } = page(params);
  const terms = new Terms(q);
  let rows = [];
  let prefix = terms.prefixFirst();
  const limit = Math.min(asked, SEARCH_WINDOW - offset);
  if (terms.words.length > 0 && offset < SEARCH_WINDOW) {
    rows = await searchOnce(sql, terms, limit, offset, prefix);
    const candidates = rows.length > 0 ? Number(rows[0].candidates) : 0;
    if (terms.typing && !prefix && candidates < SEARCH_WINDOW) {
      prefix = true;
      rows = await searchOnce(sql, terms, limit, offset, prefix);
    }
  }
  const shown = rows.slice(0, limit);
  return {
    query: q,
    type: "post",
    results: shown.map((row) => ({
      type: "post",
      id: String(row.id),
      title: row.title,
      title_highlight: marked(row.title, wordRanges(row.title), 0, row.title.length, terms, prefix),
      snippet: snippet(row.content, terms, prefix),
      author_id: String(row.author_id),
      tags: tags(row.tags),
      published: row.published,
      created_at: rfc3339(row.created_at),
      updated_at: rfc3339(row.updated_at),
      score: row.score,
    })),
    pagination: { limit: asked, offset, hasMore: rows.length > limit },
  };
}

// A page of a post's thread in path order (each reply after its parent,
// siblings oldest first), continuing after the `cursor` path: the post's
// visibility and count, the page with its authors, then the page's
// reaction counts and mentions, as Plaza's thread page answers them.
async function threadPage(sql, postId, params) {
  const limit = params.has("limit") ? Number(params.get("limit")) : 50;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new Invalid("limit must be a whole number from 1 to 100");
  const after = params.get("cursor") ?? "";
  const [post] = await sql`SELECT p.reply_count FROM posts p WHERE p.id = ${postId} AND ${sql.unsafe(PUBLIC)}`;
  if (!post) throw new NotFound("post");
  const rows = await sql`
    SELECT r.id, r.post_id, r.parent_id, r.author_id, u.username, u.name, u.image, r.content,
      r.status, r.depth, r.path, r.reply_count, r.created_at, r.updated_at, r.edited_at
    FROM replies r LEFT JOIN users u ON u.id = r.author_id
    WHERE r.post_id = ${postId} AND r.path > ${after}
      AND (r.status IN ('published', 'flagged') OR (r.status = 'deleted' AND r.reply_count > 0))
    ORDER BY r.path LIMIT ${limit + 1}`;
  const shown = rows.slice(0, limit);
  const ids = shown.map((row) => row.id);
  const [counts, mentions] = await Promise.all([
    sql`SELECT reply_id, emoji, total FROM reply_reaction_counts
        WHERE reply_id = ANY(${ids}) ORDER BY reply_id, first_reacted_at`,
    sql`SELECT m.reply_id, u.id, u.username FROM reply_mentions m JOIN users u ON u.id = m.user_id
        WHERE m.reply_id = ANY(${ids}) ORDER BY m.reply_id, m.position`,
  ]);
  const reactionsOf = new Map();
  for (const row of counts) {
    const key = String(row.reply_id);
    if (!reactionsOf.has(key)) reactionsOf.set(key, {});
    reactionsOf.get(key)[row.emoji] = Number(row.total);
  }
  const mentionsOf = new Map();
  for (const row of mentions) {
    const key = String(row.reply_id);
    if (!mentionsOf.has(key)) mentionsOf.set(key, []);
    mentionsOf.get(key).push({ id: String(row.id), username: row.username });
  }
  return {
    replies: shown.map((row) => ({
      id: String(row.id),
      post_id: String(row.post_id),
      parent_id: row.parent_id === null ? null : String(row.parent_id),
      author:
        row.author_id === null
          ? null
          : {
              id: String(row.author_id),
              username: row.username,
              display_name: row.name ?? row.username,
              avatar_url: row.image ?? `/api/avatar-image?seed=${row.author_id}`,
              is_bot: false,
            },
      content: row.content,
      status: row.status,
      depth: Number(row.depth),
      reply_count: Number(row.reply_count),
      reactions: reactionsOf.get(String(row.id)) ?? {},
      my_reactions: [],
      mentions: mentionsOf.get(String(row.id)) ?? [],
      created_at: rfc3339(row.created_at),
      updated_at: rfc3339(row.updated_at),
      edited_at: row.edited_at === null ? null : rfc3339(row.edited_at),
    })),
    next_cursor: rows.length > limit ? shown.at(-1).path : null,
    total: Number(post.reply_count),
  };
}

const ROUTES = { "/api/posts": listPosts, "/api/search/posts": searchPosts };
const THREAD = /^\/api\/posts\/(\d+)\/replies$/;

// The handler of a path, with the thread's post id bound.
function routeOf(pathname) {
  if (ROUTES[pathname]) return ROUTES[pathname];
  const thread = THREAD.exec(pathname);
  return thread ? (sql, params) => threadPage(sql, thread[1], params) : undefined;
}

function serve() {
  const sql = postgres(process.env.DATABASE_URL, { max: POOL });
  const server = http.createServer(async (request, response) => {
    const url = new URL(request.url, "http://peer");
    const route = request.method === "GET" ? routeOf(url.pathname) : undefined;
    if (!route) return send(response, 404, { error: "not found" });
    try {
      send(response, 200, await route(sql, url.searchParams));
    } catch (error) {
      if (error instanceof Invalid) send(response, 422, { error: error.message });
      else if (error instanceof NotFound) send(response, 404, { error: `${error.message} not found` });
      else send(response, 500, { error: String(error) });
    }
  });
  server.keepAliveTimeout = 65_000;
  server.listen(PORT, "127.0.0.1");
  process.on("SIGTERM", () => process.exit(0));
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
