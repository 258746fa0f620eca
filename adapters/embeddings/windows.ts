// Splits a long text into the windows an embedder handles well, and pools their vectors into the one vector the
// memory index keeps (one row per memory: recall, restore, forget and stats stay as they are).
//
// Why windows at all: USE-lite reads only the first 128 tokens of its input (measured: anything after ≈ 115 English
// words leaves the vector unchanged), so one vector of a whole long text describes its opening paragraph; and the
// OpenAI-compatible providers refuse inputs over their token limit. Why a window budget: the pooled vector is a mean,
// and a mean of windows spread evenly over the text estimates the mean of all of them, while USE-lite costs ≈ 0.1-0.3 s
// of a core per full window: every window of 1 MiB would be minutes of model time for one memory.

export interface WindowSpec {
  /** Longest window in UTF-16 code units; a text no longer than this is one window, unchanged. */
  readonly maxChars: number;
  /** Text shared by neighbouring windows, so a sentence cut at a window's edge is whole in the next one. */
  readonly overlapChars: number;
  /** Most windows embedded per text; a longer text is represented by this many windows spread evenly over it. */
  readonly maxWindows: number;
}

/** Where a window may end: after a sentence end, else after whitespace, else (one unbroken token) anywhere. */
function cutPoint(text: string, from: number, to: number): number {
  if (to >= text.length) return text.length;
  const minEnd = from + Math.floor((to - from) / 2); // never give up more than half a window for a nicer edge
  for (let i = to; i > minEnd; i--) if (/[.!?。！？\n]/u.test(text[i - 1]) && /\s/u.test(text[i] ?? " ")) return i;
  for (let i = to; i > minEnd; i--) if (/\s/u.test(text[i - 1])) return i;
  // Do not split a surrogate pair.
  return /[\uDC00-\uDFFF]/.test(text[to]) ? to - 1 : to;
}

/** Where the next window starts: `overlap` before `end`, moved forward to a word start, and always past `from`. */
function nextStart(text: string, from: number, end: number, overlap: number): number {
  let s = Math.max(from + 1, end - overlap);
  while (s < end && !/\s/u.test(text[s - 1])) s++;
  if (s >= end) s = Math.max(from + 1, end - overlap);
  while (s < text.length - 1 && /\s/u.test(text[s])) s++; // a window starts with a word, not the space before it
  return /[\uDC00-\uDFFF]/.test(text[s] ?? "") ? s + 1 : s;
}

/** Every window of `text` in order (overlapping by about `overlapChars`), each at most `maxChars` long. */
export function allWindows(text: string, spec: Pick<WindowSpec, "maxChars" | "overlapChars">): string[] {
  if (!(spec.maxChars >= 2) || spec.overlapChars < 0 || spec.overlapChars >= spec.maxChars / 2) throw new RangeError("window: need maxChars ≥ 2 and 0 ≤ overlapChars < maxChars / 2");
  if (text.length <= spec.maxChars) return [text];
  const out: string[] = [];
  for (let from = 0; from < text.length; ) {
    const end = cutPoint(text, from, from + spec.maxChars);
    out.push(text.slice(from, end));
    if (end >= text.length) break;
    from = nextStart(text, from, end, spec.overlapChars);
  }
  return out;
}

/** At most `count` of `items`, evenly spread, first and last included. */
export function spread<T>(items: readonly T[], count: number): T[] {
  if (items.length <= count) return [...items];
  if (count <= 1) return items.slice(0, Math.max(0, count));
  return Array.from({ length: count }, (_, i) => items[Math.round((i * (items.length - 1)) / (count - 1))]);
}

/** The windows embedded for `text`: all of them, or `maxWindows` spread over the text. */
export function windowsOf(text: string, spec: WindowSpec): string[] {
  return spread(allWindows(text, spec), Math.max(1, spec.maxWindows));
}

/** The mean direction of unit vectors, normalised (one vector: itself, unchanged). */
export function meanPool(vectors: readonly Float32Array[]): Float32Array {
  if (vectors.length === 1) return vectors[0];
  if (!vectors.length) throw new RangeError("nothing to pool");
  const out = new Float32Array(vectors[0].length);
  for (const v of vectors) for (let i = 0; i < out.length; i++) out[i] += v[i];
  let sum = 0;
  for (let i = 0; i < out.length; i++) sum += out[i] * out[i];
  // Windows pointing in exactly opposite directions (≈ never): the first window's direction stands for the text.
  if (!(sum > 0)) return vectors[0].slice();
  const inv = 1 / Math.sqrt(sum);
  for (let i = 0; i < out.length; i++) out[i] *= inv;
  return out;
}
