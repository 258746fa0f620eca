// The console API (spec/console.md), lists: pagination, filters and sorts of buckets and files, and substring
// search over many files. Over HTTP against a console on its real backbone, one stack for the file
// (test/support/console-api-suite.ts).
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { Queries } from "../projections/console/queries.ts";
import { parseFileListQuery } from "../schemas/console/http.ts";
import { expectError, privateBucket, s, uploadOk, useConsoleApiSuite, user } from "./support/console-api-suite.ts";

useConsoleApiSuite();

describe("lists (spec: Endpoints, pagination, filters, sorts)", () => {
  it("buckets: limit, opaque cursor, q, visibility and every sort", async () => {
    const u = await user();
    const names = ["Zeta", "alpha", "Mid", "beta", "ALPHABET"];
    const ids: Record<string, string> = {};
    for (const n of names) ids[n] = await privateBucket(u, n);
    await uploadOk(u, ids.Mid, { bytes: Buffer.alloc(5000), filename: "m" });
    await uploadOk(u, ids.beta, { bytes: Buffer.alloc(100), filename: "b" });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { buckets: any[]; next_cursor: string | null } = await u.c.buckets(u.spaceId, { limit: 2, ...(cursor ? { cursor } : {}) });
      expect(page.buckets.length).toBeLessThanOrEqual(2);
      seen.push(...page.buckets.map((b) => b.name));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...names].reverse()); // default: date, desc
    expect((await u.c.buckets(u.spaceId, { sortField: "name", sortOrder: "asc" })).buckets.map((b) => b.name)).toEqual(["alpha", "ALPHABET", "beta", "Mid", "Zeta"]);
    expect((await u.c.buckets(u.spaceId, { sortField: "storage" })).buckets.slice(0, 2).map((b) => b.name)).toEqual(["Mid", "beta"]);
    expect((await u.c.buckets(u.spaceId, { q: "ALPHA" })).buckets.map((b) => b.name).sort()).toEqual(["ALPHABET", "alpha"]);
    expect((await u.c.buckets(u.spaceId, { q: "%" })).buckets).toHaveLength(0);
    expect((await u.c.buckets(u.spaceId, { visibility: "public" })).buckets).toHaveLength(0);
    expect((await u.c.buckets(u.spaceId, { visibility: "private" })).buckets).toHaveLength(5);
    const b = (await u.c.buckets(u.spaceId, { q: "mid" })).buckets[0];
    expect(b).toMatchObject({ id: ids.Mid, space_id: u.spaceId, name: "Mid", visibility: "private", storage_used: 5000, storage_bucket_name: expect.stringMatching(/^wc-[0-9a-f]{32}$/) });
    for (const bad of [{ limit: 0 }, { limit: 1001 }, { limit: "x" }, { sortField: "size" }, { sortOrder: "up" }, { visibility: "hidden" }, { cursor: "garbage" }]) {
      await expectError(u.c.buckets(u.spaceId, bad as unknown as Record<string, string>), 400, "bad_request");
    }
    const withCursor = (await u.c.buckets(u.spaceId, { limit: 1 })).next_cursor!;
    await expectError(u.c.buckets(u.spaceId, { limit: 1, cursor: withCursor, sortField: "name" }), 400, "bad_request");
    expect((await u.c.buckets(u.spaceId, { limit: 1000 })).buckets).toHaveLength(5);
  });

  it("files: default 20, up to 100, pagination.{limit,hasMore,nextCursor}, q across every bucket of the space, sorts", async () => {
    const u = await user();
    const b1 = await privateBucket(u, "one");
    const b2 = await privateBucket(u, "two");
    const accepted = [];
    for (let i = 0; i < 24; i++) {
      const bucket = i % 2 ? b2 : b1;
      accepted.push([bucket, await u.c.uploadWithRetry(bucket, () => ({ bytes: Buffer.alloc(i + 1), filename: `File-${String(i).padStart(2, "0")}${i % 3 ? ".txt" : ".PNG"}`, contentType: i % 3 ? "text/plain" : "image/png" }), { everyMs: 20 })] as const);
    }
    for (const [bucket, f] of accepted) await u.c.waitForUpload(bucket, f.id);
    const first = await u.c.files("spaces", u.spaceId);
    expect(first.data).toHaveLength(20);
    expect(first.pagination).toMatchObject({ limit: 20, hasMore: true });
    const second = await u.c.files("spaces", u.spaceId, { cursor: first.pagination.nextCursor! });
    expect(second.data).toHaveLength(4);
    expect(second.pagination).toEqual({ limit: 20, hasMore: false, nextCursor: null });
    expect(new Set([...first.data, ...second.data].map((f) => f.id)).size).toBe(24);
    expect((await u.c.files("spaces", u.spaceId, { limit: 100 })).data).toHaveLength(24);
    expect((await u.c.files("buckets", b1, { limit: 100 })).data).toHaveLength(12);
    const png = await u.c.files("spaces", u.spaceId, { q: ".png", limit: 100 });
    expect(png.data).toHaveLength(8);
    expect(new Set(png.data.map((f) => f.bucket_id))).toEqual(new Set([b1, b2]));
    const byName = await u.c.files("spaces", u.spaceId, { sortField: "name", sortOrder: "asc", limit: 3 });
    expect(byName.data.map((f) => f.name)).toEqual(["File-00.PNG", "File-01.txt", "File-02.txt"]);
    const bySize = await u.c.files("spaces", u.spaceId, { sortField: "size", limit: 2 });
    expect(bySize.data.map((f) => f.size)).toEqual([24, 23]);
    const byType = await u.c.files("spaces", u.spaceId, { sortField: "type", sortOrder: "asc", limit: 100 });
    expect(byType.data.slice(0, 8).every((f) => f.mime_type === "image/png")).toBe(true);
    // paging a sort by size, 5 at a time, returns every file once
    const all: number[] = [];
    let cursor: string | null = null;
    do {
      const p: { data: any[]; pagination: { nextCursor: string | null } } = await u.c.files("spaces", u.spaceId, { sortField: "size", sortOrder: "asc", limit: 5, ...(cursor ? { cursor } : {}) });
      all.push(...p.data.map((f) => f.size));
      cursor = p.pagination.nextCursor;
    } while (cursor);
    expect(all).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
    for (const bad of [{ limit: 0 }, { limit: 101 }, { sortField: "storage" }, { sortOrder: "sideways" }]) {
      await expectError(u.c.files("spaces", u.spaceId, bad as unknown as Record<string, string>), 400, "bad_request");
    }
    await expectError(u.c.spaces("other" as "team"), 400, "bad_request");
  });
});

describe("search over many files (the query layer on the read model)", () => {
  it("a substring search returns exactly the matching files in order, common or rare, across the window", async () => {
    const space = randomUUID();
    const bucket = randomUUID();
    // 2,600 files straight into the read model (the search's steps past its 4,000-row window are covered by
    // test/console-queries.test.ts with small sizes)
    await s.db.query(
      `INSERT INTO console_files (file_id, bucket_id, space_id, name, blob_id, storage_bucket_name, storage_key, size, mime_type, status, is_private, metadata, name_claim, upload_state, created_at, updated_at)
       SELECT gen_random_uuid(), $2::uuid, $1::uuid, (CASE WHEN i % 2 = 0 THEN 'Common-' ELSE 'other-' END) || lpad(i::text, 5, '0') || '.txt',
         'b', 's', 'k', i, 'text/plain', 'completed', false, '{}', 'c', 'completed', now() - (3000 - i) * interval '1 second', now()
       FROM generate_series(0, 2599) i`,
      [space, bucket],
    );
    const q = new Queries(s.db);
    const all = async (query: string) => {
      const names: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { rows: { name: string }[]; next: string | null } = await q.files("space", space, parseFileListQuery(new URLSearchParams(query + (cursor ? `&cursor=${cursor}` : ""))));
        names.push(...page.rows.map((r) => r.name));
        cursor = page.next;
      } while (cursor);
      return names;
    };
    const common = await all("q=COMMON&limit=100");
    expect(common).toHaveLength(1300);
    expect(common[0]).toBe("Common-02598.txt");
    expect(await all("q=other-00001")).toEqual(["other-00001.txt"]);
    // rare and old (outside the newest 1,000 rows): found through the trigram index, in order, across pages
    const rare = await all("q=-0001&limit=3");
    expect(rare).toEqual(Array.from({ length: 10 }, (_, k) => 19 - k).map((i) => `${i % 2 ? "other" : "Common"}-000${i}.txt`));
    expect(await all("q=absent")).toEqual([]);
    expect(await all("q=common-0000&sortField=name&sortOrder=asc")).toEqual(["Common-00000.txt", "Common-00002.txt", "Common-00004.txt", "Common-00006.txt", "Common-00008.txt"]);
    expect((await q.files("bucket", bucket, parseFileListQuery(new URLSearchParams("q=other-02599")))).rows.map((r) => r.name)).toEqual(["other-02599.txt"]);
  });
});
