// Feature-hashing embedder: the local default on the write hot path. No model, no state, deterministic across
// processes and machines (the vector space is named by `name`, so an index built with other settings is detectable).
import type { EmbeddingPort } from "../ports.ts";

export interface HashingOptions {
  /** Buckets; ≤ 2000 so pgvector's HNSW can index the column. */
  readonly dims?: number;
  /** Hash adjacent content-word pairs too (helps phrases such as "support group"). */
  readonly bigrams?: boolean;
  /** Weight of a bigram feature relative to a unigram. */
  readonly bigramWeight?: number;
}

export const MAX_INDEXABLE_DIMS = 2000;

// Function words that carry no topic; questions are mostly made of them ("what did she ..."), so they would only
// add noise to query vectors. Contractions appear with the apostrophe removed (see `normalise`).
export const STOPWORDS: ReadonlySet<string> = new Set(
  (
    "a an the and or but if then else so of to in on at by for with from into onto about as than too very " +
    "is am are was were be been being do does did doing done have has had having will would shall should can " +
    "could may might must i me my mine myself we us our ours you your yours he him his she her hers it its they " +
    "them their theirs this that these those there here what which who whom whose when where why how all any " +
    "both each few more most other some such no nor not only own same just also up down out off over under " +
    "again further once im ive id ill youre youve youd youll hes shes its were theyre theyve weve wed dont " +
    "doesnt didnt isnt arent wasnt werent cant couldnt wont wouldnt shouldnt havent hasnt hadnt lets thats " +
    "whats theres oh yeah yes ok okay hey hi hello wow really"
  ).split(" "),
);

const WORD = /[\p{L}\p{N}]+(?:['’][\p{L}\p{N}]+)*/gu;

/** Possessive "'s" goes; other apostrophes are dropped so "don't" and "dont" meet. */
function normalise(tok: string): string {
  if (tok.length < 3 || (!tok.includes("'") && !tok.includes("’"))) return tok;
  const t = tok.replace(/['’]s$/u, "");
  return t.replace(/['’]/gu, "");
}

const isVowel = (c: string) => c === "a" || c === "e" || c === "i" || c === "o" || c === "u";

/**
 * Light suffix stripping (plural, -ing, -ed) that maps inflections of one word to one key; the key need not be a
 * word. A final "e" is dropped too so that "bake", "baked" and "baking" all meet at "bak".
 */
export function stem(w: string): string {
  const n = w.length;
  if (n <= 3) return w;
  let s = w;
  if (s.endsWith("ies") && n > 4) s = s.slice(0, -3) + "y";
  else if (s.endsWith("sses")) s = s.slice(0, -2);
  else if (s.endsWith("s") && !s.endsWith("ss") && !s.endsWith("us") && !s.endsWith("is")) s = s.slice(0, -1);
  let cut = false;
  if (s.endsWith("ing") && s.length > 5) (s = s.slice(0, -3)), (cut = true);
  else if (s.endsWith("ied") && s.length > 4) s = s.slice(0, -3) + "y";
  else if (s.endsWith("ed") && s.length > 4) (s = s.slice(0, -2)), (cut = true);
  // running -> runn -> run; but keep "fall", "miss", "buzz" intact.
  const m = s.length;
  if (cut && m > 2 && s[m - 1] === s[m - 2] && !isVowel(s[m - 1]) && !"lsz".includes(s[m - 1])) s = s.slice(0, -1);
  if (s.length > 3 && s.endsWith("e")) s = s.slice(0, -1);
  return s;
}

// ---------------------------------------------------------------- hashing

/** murmur3's 32-bit finaliser: spreads FNV's weak low bits over the whole word. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

const FNV_PRIME = 0x01000193;

/** FNV-1a over the UTF-8 bytes of `s`, encoded on the fly (no TextEncoder allocation). */
export function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      h = Math.imul(h ^ c, FNV_PRIME);
      continue;
    }
    if (c < 0x800) {
      h = Math.imul(h ^ (0xc0 | (c >> 6)), FNV_PRIME);
    } else {
      if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
        const lo = s.charCodeAt(i + 1);
        if (lo >= 0xdc00 && lo < 0xe000) {
          i++;
          c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
          h = Math.imul(h ^ (0xf0 | (c >> 18)), FNV_PRIME);
          h = Math.imul(h ^ (0x80 | ((c >> 12) & 63)), FNV_PRIME);
          h = Math.imul(h ^ (0x80 | ((c >> 6) & 63)), FNV_PRIME);
          h = Math.imul(h ^ (0x80 | (c & 63)), FNV_PRIME);
          continue;
        }
      }
      h = Math.imul(h ^ (0xe0 | (c >> 12)), FNV_PRIME);
      h = Math.imul(h ^ (0x80 | ((c >> 6) & 63)), FNV_PRIME);
    }
    h = Math.imul(h ^ (0x80 | (c & 63)), FNV_PRIME);
  }
  return fmix32(h);
}

/** Ordered pair hash; the salt keeps bigram features apart from unigram ones. */
const pairHash = (a: number, b: number) => fmix32(Math.imul(a, 0x9e3779b1) ^ b ^ 0x2545f491);
const EMPTY_FEATURE = fnv1a("\u0000empty");

/**
 * Calls `fn` with each content token of `text`: lowercased, apostrophes normalised, stemmed, stopwords dropped. A
 * text made only of stopwords keeps them (so "how are you?" still has a direction). Exported so that a lexical
 * index (e.g. keyed token hashes) tokenises exactly as the dense vectors do.
 */
export function forEachToken(text: string, fn: (token: string) => void): void {
  const lower = text.toLowerCase();
  let n = 0;
  for (let pass = 0; pass < 2 && n === 0; pass++) {
    WORD.lastIndex = 0;
    for (let m = WORD.exec(lower); m !== null; m = WORD.exec(lower)) {
      const w = normalise(m[0]);
      if (pass === 0 && STOPWORDS.has(w)) continue;
      n++;
      fn(stem(w));
    }
  }
}

export function contentTokens(text: string): string[] {
  const out: string[] = [];
  forEachToken(text, (t) => out.push(t));
  return out;
}

/** Token hashes of `text` in `out` (grown when needed and returned) and their count. */
function tokenHashes(text: string, out: Uint32Array = new Uint32Array(64)): { hashes: Uint32Array; count: number } {
  let n = 0;
  forEachToken(text, (t) => {
    if (n === out.length) {
      const grown = new Uint32Array(out.length * 2);
      grown.set(out);
      out = grown;
    }
    out[n++] = fnv1a(t);
  });
  return { hashes: out, count: n };
}

/** Feature weight hook, e.g. query-side IDF from a namespace's document frequencies (see `features`). */
export type FeatureWeight = (feature: number) => number;

/** Adds sign·(1 + ln tf)·weight of each distinct feature in feats[0..n) to its bucket. Sorts feats in place. */
function addFeatures(vec: Float32Array, feats: Uint32Array, n: number, weight: number, idf?: FeatureWeight): void {
  const view = feats.subarray(0, n).sort();
  const dims = vec.length;
  for (let i = 0; i < n; ) {
    const h = view[i];
    let j = i + 1;
    while (j < n && view[j] === h) j++;
    // High bits choose the bucket (multiply-shift, any dims), the low bit the sign: independent bits.
    const bucket = Math.floor((h * dims) / 4294967296);
    const w = weight * (1 + Math.log(j - i)) * (idf ? idf(h) : 1);
    vec[bucket] += h & 1 ? w : -w;
    i = j;
  }
}

export class HashingEmbedder implements EmbeddingPort {
  readonly name: string;
  readonly dims: number;
  private readonly bigrams: boolean;
  private readonly bigramWeight: number;
  // Scratch buffers reused across texts: embedding is synchronous, so no interleaving can touch them.
  private uni: Uint32Array = new Uint32Array(256);
  private bi: Uint32Array = new Uint32Array(256);

  constructor(opts: HashingOptions = {}) {
    this.dims = opts.dims ?? 1024;
    if (!Number.isInteger(this.dims) || this.dims < 8 || this.dims > MAX_INDEXABLE_DIMS)
      throw new RangeError(`hashing embedder dims must be an integer in 8..${MAX_INDEXABLE_DIMS}, got ${opts.dims}`);
    this.bigrams = opts.bigrams ?? false;
    this.bigramWeight = opts.bigramWeight ?? 0.25;
    this.name = `hashing-v1-d${this.dims}` + (this.bigrams ? `-bi${this.bigramWeight}` : "");
  }

  /** Distinct unigram and bigram features of `text` (for document-frequency statistics). */
  features(text: string): Uint32Array {
    const { hashes, count } = tokenHashes(text);
    const all = new Uint32Array(this.bigrams ? Math.max(0, 2 * count - 1) : count);
    all.set(hashes.subarray(0, count));
    if (this.bigrams) for (let i = 1; i < count; i++) all[count + i - 1] = pairHash(hashes[i - 1], hashes[i]);
    return new Uint32Array(new Set(all));
  }

  embedOne(text: string, idf?: FeatureWeight): Float32Array {
    const { hashes, count } = tokenHashes(text, this.uni);
    this.uni = hashes;
    const vec = new Float32Array(this.dims);
    if (count === 0) {
      vec[Math.floor((EMPTY_FEATURE * this.dims) / 4294967296)] = 1;
      return vec;
    }
    if (this.bigrams && count > 1) {
      if (this.bi.length < count) this.bi = new Uint32Array(this.uni.length);
      for (let i = 1; i < count; i++) this.bi[i - 1] = pairHash(hashes[i - 1], hashes[i]);
      addFeatures(vec, this.bi, count - 1, this.bigramWeight, idf);
    }
    addFeatures(vec, hashes, count, 1, idf); // after the bigrams: it reorders `hashes`
    let sum = 0;
    for (let i = 0; i < vec.length; i++) sum += vec[i] * vec[i];
    // Colliding features of opposite sign can cancel exactly; fall back to the empty direction.
    if (sum === 0) vec[Math.floor((EMPTY_FEATURE * this.dims) / 4294967296)] = 1;
    else {
      const inv = 1 / Math.sqrt(sum);
      for (let i = 0; i < vec.length; i++) vec[i] *= inv;
    }
    return vec;
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map((t) => this.embedOne(t));
  }
}
