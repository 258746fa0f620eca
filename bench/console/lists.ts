// The console benchmark's list measurement: files seeded as upload events through the console projection, spread
// over 10 buckets, then sequential list requests over HTTP in every scenario, each answer checked during the warm-up.
import { randomUUID, createHash } from "node:crypto";
import type { EventLog } from "../../eventlog/connection.ts";
import { encodeCommit, envelope } from "../../eventlog/event-store.ts";
import type { DirectoryContext } from "../../actors/console/directory.ts";
import { AGG, EV, type UploadQueued } from "../../schemas/console/events.ts";
import { pct, round, type ConsoleBenchResult, type ListScenario } from "./results.ts";
import type { BenchSession } from "./session.ts";

export interface ListRun extends BenchSession {
  readonly log: EventLog;
  readonly dir: DirectoryContext;
  /** files seeded into the space */
  readonly fileCount: number;
  /** list requests measured per scenario (default 300) */
  readonly listRequests?: number;
}

export async function measureLists(run: ListRun): Promise<NonNullable<ConsoleBenchResult["list"]>> {
  const { say, db, c, key, spaceId, user, log, dir, fileCount, listRequests } = run;
  const buckets: { id: string; storage: string }[] = [];
  for (let i = 0; i < 10; i++) {
    const b = await c.createPrivateBucket(spaceId, `library-${i}`, key.service_key!.secret_key);
    buckets.push({ id: b.bucket_id, storage: (await c.bucket(b.bucket_id)).storage_bucket_name });
  }
  say(`seeding ${fileCount} files through the event log and the console projection ...`);
  const tSeed = performance.now();
  const kinds = [
    ["IMG_", ".jpg", "image/jpeg"],
    ["report-", ".pdf", "application/pdf"],
    ["notes ", ".md", "text/markdown"],
    ["dataset_", ".parquet", "application/octet-stream"],
    ["clip-", ".mp4", "video/mp4"],
  ] as const;
  const base = Date.now() - fileCount * 1000;
  let lastSeq = 0;
  const inFlight = new Set<Promise<void>>();
  for (let i = 0; i < fileCount; i++) {
    const [prefix, ext, mime] = kinds[i % kinds.length];
    const b = buckets[i % buckets.length];
    const fileId = randomUUID();
    const created = new Date(base + i * 1000).toISOString();
    const queued: UploadQueued = {
      file_id: fileId,
      bucket_id: b.id,
      space_id: spaceId,
      name: `${prefix}${String(i).padStart(6, "0")}${ext}`,
      size: 1_000 + ((i * 7919) % 5_000_000),
      mime_type: mime,
      blob_id: createHash("sha256").update(fileId).digest("base64url"),
      md5: "0".repeat(32),
      is_private: true,
      metadata: { seq: i },
      storage_bucket_name: b.storage,
      storage_key: fileId,
      uploader_user_id: user.user.user_id,
      uploader_key_id: key.key_id,
      owner_address: key.service_key!.address,
      name_claim: `f-${b.id}-${i}`,
      created_at: created,
    };
    const ctx = { causationId: fileId, correlationId: fileId };
    const events = [
      envelope(`${AGG.upload}.${fileId}`, { type: EV.uploadQueued, version: 1, data: queued }, ctx),
      envelope(`${AGG.upload}.${fileId}`, { type: EV.uploadStarted, version: 1, data: { started_at: created } }, ctx),
      envelope(`${AGG.upload}.${fileId}`, { type: EV.uploadCompleted, version: 1, data: { storage_object_id: "0x" + "0".repeat(64), completed_at: created, bucket_id: b.id, space_id: spaceId, size: queued.size } }, ctx),
    ];
    const p = log.js.publish(`evt.${AGG.upload}.${fileId}`, encodeCommit({ events })).then((ack) => {
      lastSeq = Math.max(lastSeq, ack.seq);
    });
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
    if (inFlight.size >= 2_000) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  await dir.settle(lastSeq);
  // what autovacuum does after a bulk insert like this one (PostgreSQL 13+ vacuums on inserts too): the visibility
  // map for index-only scans and statistics for the planner
  await db.query("VACUUM ANALYZE console_files");
  const seedSeconds = round((performance.now() - tSeed) / 1000, 1);
  say(`seeded in ${seedSeconds} s; measuring lists ...`);
  const total = (await c.files("spaces", spaceId, { limit: 1 })).pagination.hasMore;
  if (!total) throw new Error("seeding did not reach the read model");

  const deepCursors: string[] = [];
  let cur: string | null = null;
  for (let i = 0; i < 50; i++) {
    const p: { pagination: { nextCursor: string | null } } = await c.files("spaces", spaceId, { limit: 100, ...(cur ? { cursor: cur } : {}) });
    cur = p.pagination.nextCursor;
    if (cur) deepCursors.push(cur);
  }
  const n = listRequests ?? 300;
  const oneFile = (i: number) => `img_${String(((i * 37) % Math.floor(fileCount / 5)) * 5).padStart(6, "0")}`;
  type Page = { data: { name: string }[]; pagination: { hasMore: boolean } };
  // [name, request, check of the answer (run on the warm-up requests: the figures are of correct answers)]
  const scenarios: [string, (i: number) => Promise<Page>, (p: Page, i: number) => boolean][] = [
    ["space, newest first (default)", () => c.files("spaces", spaceId), (p) => p.data.length === 20],
    ["space, 100 per page, deep cursor", (i) => c.files("spaces", spaceId, { limit: 100, cursor: deepCursors[i % deepCursors.length] }), (p) => p.data.length === 100],
    ["space, by name asc", () => c.files("spaces", spaceId, { sortField: "name", sortOrder: "asc" }), (p) => p.data.length === 20],
    ["space, by size desc", () => c.files("spaces", spaceId, { sortField: "size" }), (p) => p.data.length === 20],
    ["space, by type asc", () => c.files("spaces", spaceId, { sortField: "type", sortOrder: "asc" }), (p) => p.data.length === 20],
    ["space, q matching many (\"report\")", () => c.files("spaces", spaceId, { q: "report" }), (p) => p.data.length === 20 && p.data.every((f) => f.name.startsWith("report-"))],
    ["space, by size desc, q matching many", () => c.files("spaces", spaceId, { sortField: "size", q: "report" }), (p) => p.data.length === 20],
    [
      "space, q matching 4 % of files, none among the newest (\"_01\")",
      () => c.files("spaces", spaceId, { q: "_01" }),
      (p) => (fileCount < 20_000 || p.data.length === 20) && p.data.every((f) => f.name.toLowerCase().includes("_01")),
    ],
    // the names sort clip-, dataset_, img_, notes, report-: every match after 80 % of the space
    ["space, by name asc, q matching 20 % of files that sort last", () => c.files("spaces", spaceId, { sortField: "name", sortOrder: "asc", q: "report" }), (p) => p.data.length === 20 && p.data.every((f) => f.name.startsWith("report-"))],
    ["space, q matching one file", (i) => c.files("spaces", spaceId, { q: oneFile(i) }), (p, i) => p.data.length === 1 && p.data[0].name.toLowerCase().startsWith(oneFile(i))],
    ["space, q matching none", () => c.files("spaces", spaceId, { q: "no-such-file" }), (p) => p.data.length === 0],
    ["bucket, newest first", (i) => c.files("buckets", buckets[i % buckets.length].id), (p) => p.data.length === 20],
    // "notes" files are in buckets 2 and 7 only: most of these searches match nothing in the bucket
    ["bucket, by name desc, q", (i) => c.files("buckets", buckets[i % buckets.length].id, { sortField: "name", q: "notes" }), (p) => p.data.every((f) => f.name.startsWith("notes "))],
  ];
  const all: number[] = [];
  const out: ListScenario[] = [];
  for (const [name, fn, ok] of scenarios) {
    for (let i = 0; i < 5; i++) if (!ok(await fn(i), i)) throw new Error(`list ${name}: unexpected answer`);
    const lat: number[] = [];
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      await fn(i);
      lat.push(performance.now() - t);
    }
    all.push(...lat);
    out.push({ name, requests: n, p50_ms: round(pct(lat, 50)), p99_ms: round(pct(lat, 99)) });
    say(`list ${name}: p50 ${round(pct(lat, 50))} ms, p99 ${round(pct(lat, 99))} ms`);
  }
  return { files: fileCount, seed_seconds: seedSeconds, p50_ms: round(pct(all, 50)), p99_ms: round(pct(all, 99)), scenarios: out };
}
