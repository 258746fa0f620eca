// Whether an owner's namespace already states a fact (analyze skips such facts): the nearest memory by cosine
// distance, with its keyed lexical terms (the lexical index's postings), judged by `isNearDuplicate`.
import type { Db } from "../../db/pool.ts";
import type { OwnerLexicalKey } from "../../adapters/lexical/keys.ts";
import { queryTerms } from "../../adapters/lexical/terms.ts";
import { halfvecBinary } from "../../db/halfvec.ts";

/** Same meaning whatever the wording: the embeddings agree closely. */
export const SAME_VECTOR_DISTANCE = 0.05;
/** Same words, nearly the same meaning: close vectors and most keyed terms shared. */
export const CLOSE_VECTOR_DISTANCE = 0.25;
export const SHARED_TERMS = 0.8;

export interface Nearest {
  readonly id: string;
  readonly blob_id: string;
  readonly distance: number;
  /** Keyed term hashes of the memory's text; empty when the lexical index does not hold it. */
  readonly terms: readonly string[];
}

export function isNearDuplicate(distance: number, factTerms: readonly (number | string)[], memoryTerms: readonly (number | string)[]): boolean {
  if (distance <= SAME_VECTOR_DISTANCE) return true;
  if (distance > CLOSE_VECTOR_DISTANCE || !factTerms.length || !memoryTerms.length) return false;
  const a = new Set(factTerms.map(String));
  const b = new Set(memoryTerms.map(String));
  let shared = 0;
  for (const t of a) if (b.has(t)) shared++;
  return shared / (a.size + b.size - shared) >= SHARED_TERMS;
}

export async function nearestMemory(db: Db, owner: string, namespace: string, vector: ArrayLike<number>): Promise<Nearest | undefined> {
  const r = await db.query<{ id: string; blob_id: string; distance: number; terms: string[] | null }>(
    `SELECT m.id::text, m.blob_id, (m.vector <=> $1::halfvec) AS distance,
            (SELECT array_agg(p.term::text) FROM lexical_docs d JOIN lexical_postings p ON p.doc = d.doc WHERE d.memory_id = m.id) AS terms
     FROM memories m WHERE m.owner = $2 AND m.namespace = $3 ORDER BY distance, m.id LIMIT 1`,
    [halfvecBinary(vector), owner, namespace],
  );
  const row = r.rows[0];
  return row && { id: row.id, blob_id: row.blob_id, distance: Number(row.distance), terms: row.terms ?? [] };
}

export interface FactSplit {
  /** Facts the namespace does not state yet, in extraction order. */
  readonly fresh: readonly string[];
  readonly skipped: readonly { readonly text: string; readonly duplicate_of: string; readonly distance: number }[];
}

/** Which of the facts (each with its vector) the owner's namespace already states; `key` hashes the facts' terms. */
export async function splitNewFacts(db: Db, owner: string, namespace: string, facts: readonly string[], vectors: readonly ArrayLike<number>[], key?: OwnerLexicalKey): Promise<FactSplit> {
  const fresh: string[] = [];
  const skipped: FactSplit["skipped"][number][] = [];
  for (let i = 0; i < facts.length; i++) {
    const nearest = await nearestMemory(db, owner, namespace, vectors[i]);
    if (nearest && isNearDuplicate(nearest.distance, key ? queryTerms(key, facts[i]) : [], nearest.terms)) skipped.push({ text: facts[i], duplicate_of: nearest.blob_id, distance: nearest.distance });
    else fresh.push(facts[i]);
  }
  return { fresh, skipped };
}
