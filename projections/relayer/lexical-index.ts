// The keyed lexical index read model (DESIGN.md section 6): BM25 postings over keyed term hashes, rebuilt by replay
// like every read model. It follows the memory index's subject family (`evt.job.>`) in log order:
//   job.indexed        a remembered memory: its keyed terms (schemas/relayer/lexical.ts) and its submission order
//   memory.restored    re-indexed rows, when they carry keyed terms (restore re-reads the plaintext)
//   memory.forgotten   every document of (owner, namespace) indexed before it is removed
// Memories without keyed terms (manual memories: the relayer never sees their text) have no row here; recall
// ranks them by the dense vector alone.
//
// Tables (never a token, never text):
//   lexical_namespaces  (owner, namespace) → ns_id, document count and total length (BM25's N and avgdl)
//   lexical_docs        one row per memory: its ns_id, doc number, length, submission order and `pos`, its rank in
//                       that order within the namespace (0 = first submitted), kept gapless so that a memory's
//                       neighbours — its conversational context — are pos ± 1, 2, 3
//   lexical_postings    (ns_id, term hash) → the document's pos, term frequency and length, read by index-only
//                       scans of one range per query term
// Document frequencies are counted from the postings a query reads (the same index range), so they are exact per
// namespace and cost no write.
import { carriesEventTypes, type Projection } from "../runtime.ts";
import { prepared, type Db, type Tx } from "../../db/pool.ts";
import { JOB, JOB_EVENTS } from "../../schemas/relayer/remember-job.ts";
import { eventFilter } from "../../eventlog/subjects.ts";
import { MEMORY_EVENTS, type IndexLogEvent, type MemoryForgotten } from "../../schemas/relayer/memory-maintenance.ts";
import { isLexicalTerms, type LexicalTerms } from "../../schemas/relayer/lexical.ts";
import { LEXICAL_SCHEME } from "../../adapters/lexical/keys.ts";
import { copyBinary, encodeBinaryCopy, exactEpochMicros } from "../../db/copy-binary.ts";

export const LEXICAL_INDEX = "lexical_index";

export async function migrateLexical(db: Db): Promise<void> {
  await db.query(`CREATE TABLE IF NOT EXISTS lexical_namespaces (
    ns_id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner text NOT NULL,
    namespace text NOT NULL,
    docs integer NOT NULL DEFAULT 0,
    total_len bigint NOT NULL DEFAULT 0,
    UNIQUE (owner, namespace))`);
  await db.query(`CREATE TABLE IF NOT EXISTS lexical_docs (
    doc bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ns_id integer NOT NULL,
    memory_id uuid NOT NULL UNIQUE,
    submitted_at timestamptz NOT NULL,
    position integer NOT NULL,
    len smallint NOT NULL,
    pos integer NOT NULL)`);
  await db.query("CREATE INDEX IF NOT EXISTS lexical_docs_order ON lexical_docs (ns_id, submitted_at, position, memory_id)");
  await db.query("CREATE INDEX IF NOT EXISTS lexical_docs_pos ON lexical_docs (ns_id, pos) INCLUDE (memory_id)");
  // Postings carry the document's `pos` so that a query reads one index range per term and joins nothing; a
  // renumbering rewrites the postings of the documents it moves (found by `doc`).
  await db.query(`CREATE TABLE IF NOT EXISTS lexical_postings (
    ns_id integer NOT NULL,
    term bigint NOT NULL,
    doc bigint NOT NULL,
    pos integer NOT NULL,
    tf smallint NOT NULL,
    len smallint NOT NULL)`);
  await db.query("CREATE INDEX IF NOT EXISTS lexical_postings_term ON lexical_postings (ns_id, term) INCLUDE (pos, tf, len)");
  await db.query("CREATE INDEX IF NOT EXISTS lexical_postings_doc ON lexical_postings (doc)");
}

/** One memory to add. */
interface DocIn {
  readonly memoryId: string;
  readonly owner: string;
  readonly namespace: string;
  readonly submittedAt: string;
  readonly position: number;
  readonly terms: LexicalTerms;
}

/** Documents collected in log order, inserted together. */
class DocBatch {
  private docs: DocIn[] = [];

  add(d: DocIn): void {
    if (d.terms.scheme !== LEXICAL_SCHEME) return;
    this.docs.push(d);
  }

  /**
   * Namespaces first; then, when every new document sorts after the last one of its namespace (the usual case: a
   * replay, or submissions in order), the documents are written at their places and their postings copied in binary;
   * otherwise the documents are inserted unplaced and placed by renumbering the namespaces' tails (placeAndPost).
   */
  async flush(tx: Tx): Promise<void> {
    if (!this.docs.length) return;
    const docs = this.docs;
    this.docs = [];
    const key = (d: DocIn) => `${d.owner}\u0000${d.namespace}`;
    const pairs = [...new Map(docs.map((d) => [key(d), d] as const)).values()];
    const owners = pairs.map((d) => d.owner);
    const names = pairs.map((d) => d.namespace);
    const ns = await tx.query<{ ns_id: number; owner: string; namespace: string }>(prepared(
      `WITH x AS (SELECT * FROM unnest($1::text[], $2::text[]) AS x(owner, namespace)),
            ins AS (INSERT INTO lexical_namespaces (owner, namespace) SELECT owner, namespace FROM x
                    ON CONFLICT (owner, namespace) DO NOTHING RETURNING ns_id, owner, namespace)
       SELECT ns_id, owner, namespace FROM ins
       UNION ALL SELECT n.ns_id, n.owner, n.namespace FROM lexical_namespaces n JOIN x ON n.owner = x.owner AND n.namespace = x.namespace`,
      [owners, names],
    ));
    const nsId = new Map<string, number>(ns.rows.map((r) => [`${r.owner}\u0000${r.namespace}`, r.ns_id]));
    if (await appendInOrder(tx, docs.map((d) => ({ ...d, nsId: nsId.get(key(d))! })))) return;
    // Documents: a memory already indexed (redelivery, a restore of an indexed blob) keeps its row.
    const inserted = await tx.query<{ doc: string; memory_id: string; ns_id: number; len: number }>(
      `WITH ins AS (
         INSERT INTO lexical_docs (ns_id, memory_id, submitted_at, position, len, pos)
         SELECT ns_id, memory_id, submitted_at, position, len, -1
         FROM unnest($1::int[], $2::uuid[], $3::timestamptz[], $4::int[], $5::smallint[]) AS x(ns_id, memory_id, submitted_at, position, len)
         ON CONFLICT (memory_id) DO NOTHING
         RETURNING doc, memory_id, ns_id, len),
       counts AS (
         UPDATE lexical_namespaces n SET docs = n.docs + c.c, total_len = n.total_len + c.l
         FROM (SELECT ns_id, count(*)::int AS c, sum(len)::bigint AS l FROM ins GROUP BY ns_id) c WHERE n.ns_id = c.ns_id)
       SELECT doc, memory_id, ns_id, len FROM ins`,
      [docs.map((d) => nsId.get(key(d))), docs.map((d) => d.memoryId), docs.map((d) => d.submittedAt), docs.map((d) => d.position), docs.map((d) => d.terms.len)],
    );
    if (!inserted.rows.length) return;
    const byMemory = new Map(docs.map((d) => [d.memoryId.toLowerCase(), d] as const));
    await placeAndPost(tx, inserted.rows.map((r) => ({ doc: Number(r.doc), nsId: r.ns_id, terms: byMemory.get(r.memory_id)!.terms })));
  }
}

/** A document with its namespace's id, and where it goes. */
interface Placed {
  readonly doc: number;
  readonly nsId: number;
  readonly terms: LexicalTerms;
}

/** The postings of placed documents (`pos`: each document's place), copied in binary. */
async function copyPostings(tx: Tx, docs: readonly (Placed & { readonly pos: number })[]): Promise<void> {
  const n = docs.reduce((s, d) => s + d.terms.terms.length, 0);
  const ns = new Int32Array(n), term = new Float64Array(n), doc = new Float64Array(n), pos = new Int32Array(n), tf = new Int16Array(n), len = new Int16Array(n);
  let i = 0;
  for (const d of docs) {
    d.terms.terms.forEach((t, j) => {
      ns[i] = d.nsId;
      term[i] = t;
      doc[i] = d.doc;
      pos[i] = d.pos;
      tf[i] = d.terms.tf[j];
      len[i] = d.terms.len;
      i++;
    });
  }
  await copyBinary(tx, "lexical_postings (ns_id, term, doc, pos, tf, len)", encodeBinaryCopy(["int4", "int8", "int8", "int4", "int2", "int2"], [ns, term, doc, pos, tf, len]));
}

/** Submission order, as lexical_docs_order sorts: time, position in the request, then the memory id's bytes. */
const compareOrder = (a: { us: number; position: number; id: string }, b: { us: number; position: number; id: string }) =>
  a.us - b.us || a.position - b.position || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * Writes the batch's new documents at their final places when each sorts after every document already in its
 * namespace: places are the namespace's count onwards, doc ids are drawn from the identity, documents go in with one
 * statement (counts included) and postings by binary COPY — no unplaced rows to renumber. Returns false, having
 * written nothing, when a document would land before an existing one (or a time is not exact in JavaScript).
 */
async function appendInOrder(tx: Tx, batch: readonly (DocIn & { nsId: number })[]): Promise<boolean> {
  // A memory already indexed (redelivery, a restore of an indexed blob) keeps its row; within a batch the first wins.
  const ids = [...new Set(batch.map((d) => d.memoryId.toLowerCase()))];
  const known = new Set((await tx.query<{ id: string }>(prepared("SELECT memory_id::text AS id FROM lexical_docs WHERE memory_id = ANY($1::uuid[])", [ids]))).rows.map((r) => r.id));
  const fresh: { d: DocIn & { nsId: number }; us: number; position: number; id: string }[] = [];
  for (const d of batch) {
    const id = d.memoryId.toLowerCase();
    if (known.has(id)) continue;
    known.add(id);
    const us = exactEpochMicros(d.submittedAt);
    if (us === undefined) return false;
    fresh.push({ d, us, position: d.position, id });
  }
  if (!fresh.length) return true;
  const nsIds = [...new Set(fresh.map((f) => f.d.nsId))];
  const tails = await tx.query<{ ns_id: number; docs: number; us: string | null; position: number | null; id: string | null }>(prepared(
    `SELECT n.ns_id, n.docs, (extract(epoch FROM t.submitted_at) * 1000000)::bigint AS us, t.position, t.memory_id::text AS id
     FROM lexical_namespaces n LEFT JOIN LATERAL (
       SELECT submitted_at, position, memory_id FROM lexical_docs d WHERE d.ns_id = n.ns_id
       ORDER BY submitted_at DESC, position DESC, memory_id DESC LIMIT 1) t ON true
     WHERE n.ns_id = ANY($1::int[])`,
    [nsIds],
  ));
  const tail = new Map(tails.rows.map((r) => [r.ns_id, r] as const));
  fresh.sort((a, b) => a.d.nsId - b.d.nsId || compareOrder(a, b));
  for (let i = 0; i < fresh.length; i++) {
    const f = fresh[i];
    if (i > 0 && fresh[i - 1].d.nsId === f.d.nsId) continue;
    const t = tail.get(f.d.nsId)!;
    if (t.us !== null && compareOrder(f, { us: Number(t.us), position: t.position!, id: t.id! }) <= 0) return false;
  }
  const drawn = await tx.query<{ doc: string }>(prepared("SELECT nextval(pg_get_serial_sequence('lexical_docs', 'doc')) AS doc FROM generate_series(1, $1)", [fresh.length]));
  const next = new Map(nsIds.map((id) => [id, tail.get(id)!.docs] as const));
  const placed = fresh.map((f, i) => {
    const pos = next.get(f.d.nsId)!;
    next.set(f.d.nsId, pos + 1);
    return { doc: Number(drawn.rows[i].doc), nsId: f.d.nsId, terms: f.d.terms, pos, f };
  });
  await tx.query(prepared(
    `WITH ins AS (
       INSERT INTO lexical_docs (doc, ns_id, memory_id, submitted_at, position, len, pos) OVERRIDING SYSTEM VALUE
       SELECT * FROM unnest($1::bigint[], $2::int[], $3::uuid[], $4::timestamptz[], $5::int[], $6::smallint[], $7::int[])
       RETURNING ns_id, len)
     UPDATE lexical_namespaces n SET docs = n.docs + c.c, total_len = n.total_len + c.l
     FROM (SELECT ns_id, count(*)::int AS c, sum(len)::bigint AS l FROM ins GROUP BY ns_id) c WHERE n.ns_id = c.ns_id`,
    [
      placed.map((p) => p.doc),
      placed.map((p) => p.nsId),
      placed.map((p) => p.f.id),
      placed.map((p) => p.f.d.submittedAt),
      placed.map((p) => p.f.position),
      placed.map((p) => p.terms.len),
      placed.map((p) => p.pos),
    ],
  ));
  await copyPostings(tx, placed);
  return true;
}

/**
 * Gives the new documents (pos -1) their place in submission order — every document of their namespace from the
 * first new one onwards is renumbered, and the postings of older documents that moved follow — then inserts the new
 * documents' postings at their places. Submissions arrive nearly in order, so this touches the tail of a namespace;
 * a restore of old memories renumbers more. Each step reads by key or by one index range per namespace (a lateral
 * join), never the whole table: a replay applies thousands of batches.
 */
async function placeAndPost(tx: Tx, newDocs: readonly Placed[]): Promise<void> {
  const placed = await tx.query<{ doc: string; old: number; pos: number }>(
    `WITH first AS (
       SELECT DISTINCT ON (ns_id) ns_id, submitted_at, position, memory_id FROM lexical_docs
       WHERE doc = ANY($1::bigint[]) ORDER BY ns_id, submitted_at, position, memory_id),
     base AS (
       SELECT f.*, coalesce((SELECT d.pos FROM lexical_docs d
                             WHERE d.ns_id = f.ns_id AND (d.submitted_at, d.position, d.memory_id) < (f.submitted_at, f.position, f.memory_id)
                             ORDER BY d.submitted_at DESC, d.position DESC, d.memory_id DESC LIMIT 1), -1) + 1 AS base
       FROM first f)
     SELECT r.doc, r.old, r.pos FROM base b CROSS JOIN LATERAL (
       SELECT d.doc, d.pos AS old, (b.base + row_number() OVER (ORDER BY d.submitted_at, d.position, d.memory_id) - 1)::int AS pos
       FROM lexical_docs d
       WHERE d.ns_id = b.ns_id AND (d.submitted_at, d.position, d.memory_id) >= (b.submitted_at, b.position, b.memory_id)) r
     WHERE r.old <> r.pos`,
    [newDocs.map((d) => d.doc)],
  );
  const moved = placed.rows;
  if (!moved.length) return;
  await tx.query("UPDATE lexical_docs d SET pos = u.pos FROM unnest($1::bigint[], $2::int[]) AS u(doc, pos) WHERE d.doc = u.doc", [moved.map((m) => m.doc), moved.map((m) => m.pos)]);
  const older = moved.filter((m) => m.old >= 0);
  if (older.length) {
    await tx.query("UPDATE lexical_postings p SET pos = u.pos FROM unnest($1::bigint[], $2::int[]) AS u(doc, pos) WHERE p.doc = u.doc", [older.map((m) => m.doc), older.map((m) => m.pos)]);
  }
  const posOf = new Map(moved.map((m) => [Number(m.doc), m.pos]));
  await copyPostings(tx, newDocs.map((d) => ({ ...d, pos: posOf.get(d.doc)! })));
}

async function forget(tx: Tx, d: MemoryForgotten): Promise<void> {
  const r = await tx.query<{ ns_id: number }>("SELECT ns_id FROM lexical_namespaces WHERE owner = $1 AND namespace = $2", [d.owner, d.namespace]);
  if (!r.rows.length) return;
  const id = r.rows[0].ns_id;
  await tx.query("DELETE FROM lexical_postings WHERE ns_id = $1", [id]);
  await tx.query("DELETE FROM lexical_docs WHERE ns_id = $1", [id]);
  await tx.query("UPDATE lexical_namespaces SET docs = 0, total_len = 0 WHERE ns_id = $1", [id]);
}

export const lexicalIndexProjection: Projection<IndexLogEvent> = {
  name: LEXICAL_INDEX,
  filter: eventFilter(JOB),
  migrate: migrateLexical,
  // A job's first commit (accepted, uploaded) carries its vector but no terms: not even decoded.
  wants: carriesEventTypes([JOB_EVENTS.indexed, MEMORY_EVENTS.restored, MEMORY_EVENTS.forgotten]),
  reset: async (tx: Tx) => {
    await tx.query("TRUNCATE lexical_postings, lexical_docs, lexical_namespaces RESTART IDENTITY");
  },
  apply: async (tx: Tx, events) => {
    const batch = new DocBatch();
    for (const { event } of events) {
      switch (event.type) {
        case JOB_EVENTS.indexed: {
          const d = event.data;
          // optional: events of older versions and those of a relayer without a lexical key have none
          if (!isLexicalTerms(d.lexical)) break;
          batch.add({
            memoryId: event.aggregate.slice("job.".length),
            owner: d.owner,
            namespace: d.namespace,
            submittedAt: d.submitted_at ?? d.created_at,
            position: d.position !== undefined && Number.isInteger(d.position) ? d.position : 0,
            terms: d.lexical,
          });
          break;
        }
        case MEMORY_EVENTS.restored: {
          const d = event.data;
          for (const row of d.rows) {
            if (!isLexicalTerms(row.lexical)) continue;
            batch.add({ memoryId: row.id, owner: d.owner, namespace: d.namespace, submittedAt: row.created_at, position: 0, terms: row.lexical });
          }
          break;
        }
        case MEMORY_EVENTS.forgotten:
          await batch.flush(tx);
          await forget(tx, event.data);
          break;
      }
    }
    await batch.flush(tx);
  },
};
