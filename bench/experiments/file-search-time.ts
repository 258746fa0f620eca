// Times Queries.files on a database seeded by file-search-seed.ts, for the list scenarios of bench/console.ts that
// search (and a few harder ones), without the HTTP layer: p50 and p99 of 100 requests each. STEPS=1 also prints each
// statement of one request with its time (which steps the search took). ONLY=<text> runs the matching cases only.
//   node --import tsx bench/experiments/file-search-time.ts <database url> [requests]
import { createPool } from "../../db/pool.ts";
import { Queries } from "../../projections/console/queries.ts";
import type { FileListQuery } from "../../schemas/console/http.ts";

const url = process.argv[2];
const n = Number(process.argv[3] ?? 100);
const db = createPool(url, 4);
const statements: [string, number][] = [];
if (process.env.STEPS) {
  db.on("connect", (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const text = typeof args[0] === "string" ? args[0] : String((args[0] as { text?: string }).text);
      const t = performance.now();
      const out = query(...args);
      // (the pool's own query passes a callback and gets no promise: those are left untimed)
      if (out instanceof Promise) void out.finally(() => statements.push([text.replace(/\s+/g, " ").slice(0, 80), performance.now() - t])).catch(() => undefined);
      else statements.push([text.replace(/\s+/g, " ").slice(0, 80), NaN]);
      return out;
    };
  });
}
// COST=<rows walked per candidate> overrides the search's choice (1e9: always walk, 0.001: always read candidates)
const queries = process.env.COST ? new Queries(db, { window: 4_000, candidateCost: Number(process.env.COST) }) : new Queries(db);
const SPACE = "11111111-1111-1111-1111-111111111111";
const BUCKET = "00000000-0000-0000-0000-000000000002";
const q = (x: Partial<FileListQuery>): FileListQuery => ({ limit: 20, cursor: null, q: null, sortField: "date", sortOrder: "desc", ...x }) as FileListQuery;
const cases: [string, "space" | "bucket", string, (i: number) => FileListQuery][] = [
  ["newest first", "space", SPACE, () => q({})],
  ["q report", "space", SPACE, () => q({ q: "report" })],
  ["size desc, q report", "space", SPACE, () => q({ sortField: "size", q: "report" })],
  ["q _01", "space", SPACE, () => q({ q: "_01" })],
  ["name asc, q report", "space", SPACE, () => q({ sortField: "name", sortOrder: "asc", q: "report" })],
  ["q one file", "space", SPACE, (i) => q({ q: `img_${String(((i * 37) % 20000) * 5).padStart(6, "0")}` })],
  ["q none", "space", SPACE, () => q({ q: "no-such-file" })],
  ["bucket name desc, q notes", "bucket", BUCKET, () => q({ sortField: "name", q: "notes" })],
  // harder ones, not in the bench
  ["q pdf.report (trigrams common, no match)", "space", SPACE, () => q({ q: "pdf.report" })],
  ["q 77 (too short for trigrams)", "space", SPACE, () => q({ q: "77" })],
  ["q zq (too short for trigrams, no match)", "space", SPACE, () => q({ q: "zq" })],
  ["q 0 (one character), cursor past the 90,000 newest", "space", SPACE, () => q({ q: "0", cursor: { s: "date", o: "desc", v: "2026-01-01T02:46:40.000Z", id: "00000000-0000-0000-0000-000000000000" } })],
  ["name desc, q clip (all at the end)", "space", SPACE, () => q({ sortField: "name", q: "clip" })],
  ["oldest first, q _099 (2,000 matches, after 10 %)", "space", SPACE, () => q({ sortOrder: "asc", q: "_099" })],
];
const only = process.env.ONLY;
for (const [name, scope, id, make] of cases) {
  if (only && !name.includes(only)) continue;
  for (let i = 0; i < 3; i++) await queries.files(scope, id, make(i));
  const lat: number[] = [];
  let rows = 0;
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    rows = (await queries.files(scope, id, make(i))).rows.length;
    lat.push(performance.now() - t);
  }
  lat.sort((a, b) => a - b);
  const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))].toFixed(2);
  console.log(`${name.padEnd(45)} p50 ${pct(50).padStart(6)} ms  p99 ${pct(99).padStart(6)} ms  rows ${rows}`);
  if (process.env.STEPS) {
    statements.length = 0;
    await queries.files(scope, id, make(0));
    for (const [text, ms] of statements) console.log(`    ${ms.toFixed(2).padStart(6)} ms  ${text}`);
  }
}
await db.end();
