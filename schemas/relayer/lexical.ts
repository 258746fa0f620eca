// The keyed lexical signal an index event may carry (adapters/lexical/): the distinct keyed term hashes of a memory's
// text with their term frequencies, and its length in tokens. Never a token: hashes are keyed per owner, sorted by
// value (so the word order of the text is not kept either). Pure types and checks, no I/O.

export interface LexicalTerms {
  /** Hashing scheme (adapters/lexical/keys.ts LEXICAL_SCHEME); a projection ignores schemes it does not know. */
  readonly scheme: number;
  /** Distinct keyed term hashes, ascending; each a positive integer below 2^48. */
  readonly terms: readonly number[];
  /** Frequency of terms[i] in the text (1..32767). */
  readonly tf: readonly number[];
  /** Content tokens in the text (BM25's document length), at most 32767. */
  readonly len: number;
}

/** Where a memory sits in its namespace's submission order: neighbours in this order are each other's context. */
export interface SubmissionOrder {
  /** When the relayer accepted the remember (RFC 3339). */
  readonly submitted_at: string;
  /** Index of the item in its bulk request (0 for a single remember). */
  readonly position: number;
}

export const MAX_TF = 32_767;

/** True when `x` is a well-formed LexicalTerms (events are read defensively: a bad one is skipped, not fatal). */
export function isLexicalTerms(x: unknown): x is LexicalTerms {
  if (!x || typeof x !== "object") return false;
  const o = x as Record<string, unknown>;
  return (
    typeof o.scheme === "number" &&
    Array.isArray(o.terms) &&
    Array.isArray(o.tf) &&
    o.terms.length === o.tf.length &&
    typeof o.len === "number" &&
    Number.isInteger(o.len) &&
    o.len >= 0 &&
    o.terms.every((t) => Number.isSafeInteger(t) && t >= 0) &&
    o.tf.every((t) => Number.isInteger(t) && t >= 1 && t <= MAX_TF)
  );
}
