// Recall: embed the query, rank the owner's namespace exactly in Postgres (cosine, or the composite score of
// REFERENCE.md computed over every row of the namespace, so composite ranks are never limited to a cosine top
// list), fetch the ciphertexts, decrypt them with the client's credential, drop what cannot be opened. A blob that
// cannot be read now (the blob store down for a moment) is not dropped: the recall fails as unavailable (503)
// once its retries are spent (ciphertext-reads.ts).
import type { Db } from "../../db/pool.ts";
import { primaryReads, type Reads } from "../../db/read-pool.ts";
import { halfvecBinary } from "../../db/halfvec.ts";
import type { BlobPort, DecryptCredential, EmbeddingPort, EncryptionPort } from "../../adapters/ports.ts";
import type { RecallBody, ScoringWeights } from "../../schemas/relayer/http.ts";
import type { LexicalKeyring } from "../../adapters/lexical/keys.ts";
import { queryTerms } from "../../adapters/lexical/terms.ts";
import { rankHybrid, type HybridSettings } from "./hybrid-rank.ts";
import { readCiphertexts } from "./ciphertext-reads.ts";

export interface Hit {
  readonly blob_id: string;
  readonly distance: number;
  readonly score?: number;
  readonly created_at: Date;
  readonly importance: number;
}

export async function rankMemories(db: Db, q: { owner: string; namespace: string; vector: ArrayLike<number>; limit: number; weights: ScoringWeights; composite: boolean }): Promise<Hit[]> {
  const v = halfvecBinary(q.vector);
  if (!q.composite) {
    const r = await db.query<{ blob_id: string; distance: number; created_at: Date; importance: number }>(
      `SELECT blob_id, (vector <=> $1::halfvec) AS distance, created_at, importance
       FROM memories WHERE owner = $2 AND namespace = $3 ORDER BY distance, id LIMIT $4`,
      [v, q.owner, q.namespace, q.limit],
    );
    return r.rows.map((x) => ({ ...x, distance: Number(x.distance) }));
  }
  const w = q.weights;
  const r = await db.query<{ blob_id: string; distance: number; created_at: Date; importance: number; score: number }>(
    `SELECT blob_id, distance, created_at, importance,
            $5::float8 * (1 - distance)
          + $6::float8 * power(2, -(date_part('epoch', now() - created_at) / 86400.0) / $7::float8)
          + $8::float8 * importance AS score
     FROM (SELECT blob_id, id, (vector <=> $1::halfvec) AS distance, created_at, importance
           FROM memories WHERE owner = $2 AND namespace = $3) m
     ORDER BY score DESC, id LIMIT $4`,
    [v, q.owner, q.namespace, q.limit, w.semantic, w.recency, w.recency_half_life_days, w.importance],
  );
  return r.rows.map((x) => ({ ...x, distance: Number(x.distance), score: Number(x.score) }));
}

export interface RecallResult {
  readonly results: { blob_id: string; text: string; distance: number; score?: number }[];
  readonly total: number;
  readonly dropped_count?: number;
}

export async function openHits(hits: readonly Hit[], owner: string, credential: DecryptCredential, blobs: BlobPort, encryption: EncryptionPort, composite: boolean): Promise<RecallResult> {
  const ciphertexts = await readCiphertexts(blobs, hits.map((h) => h.blob_id));
  const present = ciphertexts.map((c, i) => (c ? i : -1)).filter((i) => i >= 0);
  const opened = await encryption.decryptMany(owner, present.map((i) => ciphertexts[i]!), credential);
  const texts = new Map<number, string>();
  present.forEach((i, k) => {
    const p = opened[k];
    if (p) texts.set(i, new TextDecoder().decode(p));
  });
  const results = hits.flatMap((h, i) => {
    const text = texts.get(i);
    if (text === undefined) return [];
    return [composite ? { blob_id: h.blob_id, text, distance: h.distance, score: h.score } : { blob_id: h.blob_id, text, distance: h.distance }];
  });
  const dropped = hits.length - results.length;
  return dropped ? { results, total: results.length, dropped_count: dropped } : { results, total: results.length };
}


export interface RecallPorts {
  readonly db: Db;
  /** Where the ranking query may run (DATABASE_READ_URLS replicas); default: `db`. */
  readonly reads?: Reads;
  readonly embedder: EmbeddingPort;
  readonly blobs: BlobPort;
  readonly encryption: EncryptionPort;
  /** The keyed lexical index's keys and, when recall ranks hybrid, its settings; no settings: cosine order. */
  readonly lexical?: { readonly keyring: LexicalKeyring; readonly settings?: HybridSettings };
  /** Observes the time spent embedding the query, in seconds. */
  readonly onQueryEmbedded?: (seconds: number) => void;
}

/** Recall as POST /api/recall answers it: the query embedded, the namespace ranked exactly, the hits opened. */
export async function recallMemories(ports: RecallPorts, owner: string, body: RecallBody, credential: DecryptCredential): Promise<RecallResult> {
  const t0 = performance.now();
  const [vector] = await ports.embedder.embed([body.query]);
  ports.onQueryEmbedded?.((performance.now() - t0) / 1000);
  const q = { owner, namespace: body.namespace, vector, limit: body.limit, weights: body.weights, composite: body.composite };
  const lex = ports.lexical;
  const hybrid = lex?.settings && { settings: lex.settings, terms: queryTerms(lex.keyring.forOwner(owner), body.query) };
  const hits = await (ports.reads ?? primaryReads(ports.db)).read((db) => (hybrid ? rankHybrid(db, { ...q, terms: hybrid.terms }, hybrid.settings) : rankMemories(db, q)));
  return openHits(hits, owner, credential, ports.blobs, ports.encryption, body.composite);
}
