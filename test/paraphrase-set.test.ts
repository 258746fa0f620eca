// The paraphrase evaluation set (bench/paraphrase-set.ts) is what it claims: enough facts, and no query shares a
// content word with its fact — checked with the lexical index's own tokeniser (stopwords dropped, light stemming, so
// "married"/"marry" count as shared) and again on raw lowercased words against the stopword list.
import { describe, expect, it } from "vitest";
import { contentTokens, STOPWORDS } from "../adapters/embeddings/hashing.ts";
import { PARAPHRASE_SET } from "../bench/paraphrase-set.ts";

const words = (s: string) => (s.toLowerCase().replace(/[’']/g, "'").match(/[a-z0-9']+/g) ?? []).map((w) => w.replace(/'s$/, "").replace(/'/g, "")).filter((w) => !STOPWORDS.has(w));

describe("paraphrase set", () => {
  it("has at least 40 distinct facts, each with a query", () => {
    expect(PARAPHRASE_SET.length).toBeGreaterThanOrEqual(40);
    expect(new Set(PARAPHRASE_SET.map((c) => c.fact)).size).toBe(PARAPHRASE_SET.length);
    expect(new Set(PARAPHRASE_SET.map((c) => c.query)).size).toBe(PARAPHRASE_SET.length);
  });

  it.each(PARAPHRASE_SET.map((c) => [c.query, c.fact]))("%s shares no content word with its fact", (query, fact) => {
    const stems = new Set(contentTokens(fact));
    expect(contentTokens(query).filter((t) => stems.has(t))).toEqual([]);
    const raw = new Set(words(fact));
    expect(words(query).filter((w) => raw.has(w))).toEqual([]);
  });

  it("the check catches a shared word, stemmed or not", () => {
    const shared = (q: string, f: string) => contentTokens(q).some((t) => new Set(contentTokens(f)).has(t));
    expect(shared("When did they marry?", "They got married in May.")).toBe(true);
    expect(shared("Which pet do I have?", "My cat is called Whiskers.")).toBe(false);
  });
});
