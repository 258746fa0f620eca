// Keyed term hashes of a text, tokenised exactly as the hashing embedder tokenises (lowercased, apostrophes
// normalised, light stemming, stopwords dropped): adapters/embeddings/hashing.ts `forEachToken`. The plaintext
// tokens live only inside these functions.
import { forEachToken } from "../embeddings/hashing.ts";
import { MAX_TF, type LexicalTerms } from "../../schemas/relayer/lexical.ts";
import { LEXICAL_SCHEME, type OwnerLexicalKey } from "./keys.ts";

/** Distinct terms one memory contributes at most (≈ 70 KB of JSON in its event). */
export const MAX_TERMS = 4_096;

/** The document side: distinct term hashes (ascending) with frequencies, and the length in tokens. */
export function documentTerms(key: OwnerLexicalKey, text: string): LexicalTerms {
  const counts = new Map<string, number>();
  let len = 0;
  forEachToken(text, (t) => {
    counts.set(t, (counts.get(t) ?? 0) + 1);
    len++;
  });
  const pairs: [number, number][] = [];
  const byHash = new Map<number, number>();
  for (const [tok, n] of counts) {
    const h = key.hash(tok);
    // Two tokens meeting in one 48-bit hash (≈ never) count as one term.
    byHash.set(h, (byHash.get(h) ?? 0) + n);
  }
  for (const [h, n] of byHash) pairs.push([h, Math.min(n, MAX_TF)]);
  if (pairs.length > MAX_TERMS) {
    // A very long memory keeps its most frequent terms: the event stays far below the NATS message limit.
    pairs.sort((a, b) => b[1] - a[1] || a[0] - b[0]);
    pairs.length = MAX_TERMS;
  }
  pairs.sort((a, b) => a[0] - b[0]);
  return { scheme: LEXICAL_SCHEME, terms: pairs.map((p) => p[0]), tf: pairs.map((p) => p[1]), len: Math.min(len, MAX_TF) };
}

/** The query side: distinct term hashes of the query. */
export function queryTerms(key: OwnerLexicalKey, text: string): number[] {
  const seen = new Set<string>();
  forEachToken(text, (t) => void seen.add(t));
  return [...new Set([...seen].map((t) => key.hash(t)))];
}
