// Reads of the console's read models: keyset-paginated lists with the spec's filters and sorts, and the small
// lookups the gateway's checks need. Every list is served by an index on (scope, sort key, id).
import { prepared, type Db } from "../../db/pool.ts";
import type { BucketListQuery, BucketSort, FileListQuery, FileSort } from "../../schemas/console/http.ts";
import { encodeCursor } from "../../schemas/console/http.ts";
import type { AccessScope, SpaceRole, SpaceType } from "../../schemas/console/events.ts";
import { BUCKET_COLS, BUCKET_COLS_B, FILE_COLS, FILE_LIST_COLS, cmp, dir, likePattern, type BucketRow, type FileListRow, type FileRow, type KeyRow, type SpaceRow } from "./query-parts.ts";
import { DEFAULT_SEARCH_COSTS, substringSearch, type SearchCosts } from "./file-search.ts";

const BUCKET_SORT: Record<BucketSort, { expr: string; type: string; value: (r: BucketRow) => string | number }> = {
  date: { expr: "t.created_at", type: "timestamptz", value: (r) => r.created_at.toISOString() },
  name: { expr: "lower(t.name)", type: "text", value: (r) => r.name_lower },
  storage: { expr: "t.storage_used", type: "bigint", value: (r) => Number(r.storage_used) },
};

const FILE_SORT: Record<FileSort, { expr: string; type: string; value: (r: FileListRow) => string | number }> = {
  date: { expr: "t.created_at", type: "timestamptz", value: (r) => r.created_at.toISOString() },
  name: { expr: "lower(t.name)", type: "text", value: (r) => r.name_lower },
  size: { expr: "t.size", type: "bigint", value: (r) => Number(r.size) },
  type: { expr: "t.mime_type", type: "text", value: (r) => r.mime_type },
};

export class Queries {
  constructor(
    readonly db: Db,
    /** the substring search's window and candidate cost (tests use other ones to reach every step with few files) */
    private readonly search: SearchCosts = DEFAULT_SEARCH_COSTS,
  ) {}

  async keyByHash(hash: string): Promise<KeyRow | null> {
    const r = await this.db.query<KeyRow>("SELECT key_id::text, user_id::text, role, hash, space_id::text, service_address FROM console_keys WHERE hash = $1", [hash]);
    return r.rows[0] ?? null;
  }

  /** Active service-key addresses of a user (the identities its read-only keys act with on private buckets). */
  async serviceAddresses(userId: string): Promise<string[]> {
    const r = await this.db.query<{ a: string }>("SELECT service_address AS a FROM console_keys WHERE user_id = $1 AND state = 'active' AND service_address IS NOT NULL", [userId]);
    return r.rows.map((x) => x.a);
  }

  async role(spaceId: string, userId: string): Promise<SpaceRole | null> {
    const r = await this.db.query<{ role: SpaceRole }>("SELECT role FROM console_members WHERE space_id = $1 AND user_id = $2", [spaceId, userId]);
    return r.rows[0]?.role ?? null;
  }

  async spacesOf(userId: string, type: SpaceType | null, only: string | null): Promise<SpaceRow[]> {
    const r = await this.db.query<SpaceRow>(
      `SELECT s.space_id::text, s.type, s.name, s.tier, s.storage_used::text, s.storage_cap::text, s.bucket_count, s.member_count, m.role, s.created_at
       FROM console_members m JOIN console_spaces s ON s.space_id = m.space_id
       WHERE m.user_id = $1 AND ($2::text IS NULL OR s.type = $2) AND ($3::uuid IS NULL OR s.space_id = $3)
       ORDER BY s.type = 'personal' DESC, s.created_at, s.space_id`,
      [userId, type, only],
    );
    return r.rows;
  }

  async space(spaceId: string): Promise<{ space_id: string; tier: string; storage_used: number; storage_cap: number; bucket_count: number; member_count: number } | null> {
    const r = await this.db.query<{ space_id: string; tier: string; storage_used: string; storage_cap: string; bucket_count: number; member_count: number }>(
      "SELECT space_id::text, tier, storage_used::text, storage_cap::text, bucket_count, member_count FROM console_spaces WHERE space_id = $1",
      [spaceId],
    );
    const s = r.rows[0];
    return s ? { ...s, storage_used: Number(s.storage_used), storage_cap: Number(s.storage_cap) } : null;
  }

  async liveBucketCount(spaceId: string): Promise<number> {
    const r = await this.db.query<{ n: string }>("SELECT count(*)::text AS n FROM console_buckets WHERE space_id = $1 AND state <> 'deleted'", [spaceId]);
    return Number(r.rows[0].n);
  }

  /** A bucket and the user's role in its space (null role: not a member), in one round trip. */
  async bucketWithRole(bucketId: string, userId: string): Promise<(BucketRow & { role: SpaceRole | null }) | null> {
    const q = await this.db.query<BucketRow & { role: SpaceRole | null }>(
      `SELECT ${BUCKET_COLS_B}, m.role FROM console_buckets b LEFT JOIN console_members m ON m.space_id = b.space_id AND m.user_id = $2 WHERE b.bucket_id = $1`,
      [bucketId, userId],
    );
    return q.rows[0] ?? null;
  }

  /** For an upload: the bucket, the user's role in its space and the space's quota, in one round trip. */
  async uploadTarget(
    bucketId: string,
    userId: string,
    address: string | null,
  ): Promise<(BucketRow & { role: SpaceRole | null; used: number; cap: number; inflight: number; access: AccessScope | null }) | null> {
    const r = await this.db.query<BucketRow & { role: SpaceRole | null; used: string; cap: string; inflight: string; access: AccessScope | null }>(prepared(
      `SELECT ${BUCKET_COLS_B}, m.role, s.storage_used::text AS used, s.storage_cap::text AS cap,
         (SELECT coalesce(sum(f.size), 0)::text FROM console_files f WHERE f.space_id = b.space_id AND f.status = 'uploading') AS inflight,
         (SELECT max(a.scope) FROM console_access a WHERE a.policy_id = b.encryption_policy_id AND a.address = $3) AS access
       FROM console_buckets b JOIN console_spaces s ON s.space_id = b.space_id
       LEFT JOIN console_members m ON m.space_id = b.space_id AND m.user_id = $2
       WHERE b.bucket_id = $1`,
      [bucketId, userId, address],
    ));
    const row = r.rows[0];
    return row ? { ...row, used: Number(row.used), cap: Number(row.cap), inflight: Number(row.inflight) } : null;
  }

  /** The space's storage and cap, and the bytes of its uploads in flight, in one round trip. */
  async quota(spaceId: string): Promise<{ used: number; cap: number; inFlight: number } | null> {
    const r = await this.db.query<{ used: string; cap: string; inflight: string }>(
      `SELECT s.storage_used::text AS used, s.storage_cap::text AS cap,
         (SELECT coalesce(sum(size), 0)::text FROM console_files WHERE space_id = $1 AND status = 'uploading') AS inflight
       FROM console_spaces s WHERE s.space_id = $1`,
      [spaceId],
    );
    const row = r.rows[0];
    return row ? { used: Number(row.used), cap: Number(row.cap), inFlight: Number(row.inflight) } : null;
  }

  async bucket(bucketId: string): Promise<BucketRow | null> {
    const r = await this.db.query<BucketRow>(`SELECT ${BUCKET_COLS} FROM console_buckets WHERE bucket_id = $1`, [bucketId]);
    return r.rows[0] ?? null;
  }

  /** Files that keep a bucket from being deleted: uploading or stored. */
  async bucketContents(bucketId: string): Promise<number> {
    const r = await this.db.query<{ n: string }>("SELECT count(*)::text AS n FROM console_files WHERE bucket_id = $1 AND status IN ('uploading', 'completed')", [bucketId]);
    return Number(r.rows[0].n);
  }

  async buckets(spaceId: string, q: BucketListQuery): Promise<{ rows: BucketRow[]; next: string | null }> {
    const sort = BUCKET_SORT[q.sortField];
    const params: unknown[] = [spaceId];
    const where = ["t.space_id = $1", "t.state <> 'deleted'"];
    if (q.visibility) where.push(`t.visibility = $${params.push(q.visibility)}`);
    if (q.q) where.push(`lower(t.name) LIKE $${params.push(likePattern(q.q))}`);
    if (q.cursor) {
      const v = params.push(q.cursor.v);
      const id = params.push(q.cursor.id);
      where.push(`(${sort.expr}, t.bucket_id) ${cmp(q.sortOrder)} ($${v}::${sort.type}, $${id}::uuid)`);
    }
    const limit = params.push(q.limit + 1);
    const r = await this.db.query<BucketRow>(
      `SELECT ${BUCKET_COLS} FROM console_buckets t WHERE ${where.join(" AND ")} ORDER BY ${sort.expr} ${dir(q.sortOrder)}, t.bucket_id ${dir(q.sortOrder)} LIMIT $${limit}`,
      params,
    );
    const rows = r.rows.slice(0, q.limit);
    const last = rows[rows.length - 1];
    const next = r.rows.length > q.limit && last ? encodeCursor({ s: q.sortField, o: q.sortOrder, v: sort.value(last), id: last.bucket_id }) : null;
    return { rows, next };
  }

  async file(fileId: string): Promise<FileRow | null> {
    const r = await this.db.query<FileRow>(`SELECT ${FILE_COLS} FROM console_files WHERE file_id = $1`, [fileId]);
    return r.rows[0] ?? null;
  }

  async files(scope: "space" | "bucket", scopeId: string, q: FileListQuery): Promise<{ rows: FileListRow[]; next: string | null }> {
    const sort = FILE_SORT[q.sortField];
    const params: unknown[] = [scopeId];
    const where = [`t.${scope}_id = $1`, "t.status <> 'deleted'"];
    if (q.cursor) {
      const v = params.push(q.cursor.v);
      const id = params.push(q.cursor.id);
      where.push(`(${sort.expr}, t.file_id) ${cmp(q.sortOrder)} ($${v}::${sort.type}, $${id}::uuid)`);
    }
    const order = `${sort.expr} ${dir(q.sortOrder)}, t.file_id ${dir(q.sortOrder)}`;
    let rows: FileListRow[];
    if (!q.q) {
      const limit = params.push(q.limit + 1);
      rows = (await this.db.query<FileListRow>(`SELECT ${FILE_LIST_COLS} FROM console_files t WHERE ${where.join(" AND ")} ORDER BY ${order} LIMIT $${limit}`, params)).rows;
    } else {
      rows = await substringSearch(this.db, this.search, where.join(" AND "), params, order, sort.expr, q);
    }
    const page = rows.slice(0, q.limit);
    const last = page[page.length - 1];
    const next = rows.length > q.limit && last ? encodeCursor({ s: q.sortField, o: q.sortOrder, v: sort.value(last), id: last.file_id }) : null;
    return { rows: page, next };
  }

  /** The strongest scope the access index grants any of `addresses` under a policy, null for none. */
  async access(policyId: string, addresses: readonly string[]): Promise<AccessScope | null> {
    if (!addresses.length) return null;
    const r = await this.db.query<{ scope: AccessScope }>("SELECT scope FROM console_access WHERE policy_id = $1 AND address = ANY($2::text[])", [policyId, addresses]);
    if (r.rows.some((x) => x.scope === "readwrite")) return "readwrite";
    return r.rows.length ? "read" : null;
  }
}
