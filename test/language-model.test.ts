// Unit tests of the language-model port's pure parts: the local extractor (clauses, first person to "User", dates
// against occurred_at), the local answer, strict parsing of a model's output, and the near-duplicate rule.
import { describe, expect, it } from "vitest";
import { answerLocally, extractFactsLocally, resolveDates, splitClauses, toUserFact } from "../adapters/language-model/local.ts";
import { parseAnswer, parseFacts } from "../adapters/language-model/openai.ts";
import { isNearDuplicate } from "../projections/relayer/near-duplicates.ts";

const at = new Date("2026-03-11T15:00:00Z"); // a Wednesday

describe("local extractor", () => {
  it("splits sentences and clauses, dropping questions, greetings and fragments", () => {
    expect(splitClauses("Hi! I love sushi; my sister lives in Porto. Do you like tea? Ok. I work at a bakery, but I hate mornings.")).toEqual([
      "I love sushi",
      "my sister lives in Porto.",
      "I work at a bakery",
      "I hate mornings.",
    ]);
  });

  it("writes first-person clauses as facts about User", () => {
    expect(toUserFact("I love sushi")).toBe("User loves sushi.");
    expect(toUserFact("I'm allergic to peanuts")).toBe("User is allergic to peanuts.");
    expect(toUserFact("I have two cats")).toBe("User has two cats.");
    expect(toUserFact("my sister lives in Porto.")).toBe("User's sister lives in Porto.");
    expect(toUserFact("I watch films with my brother")).toBe("User watches films with User's brother.");
    expect(toUserFact("I studied law")).toBe("User studied law.");
    expect(toUserFact("I will move to Lisbon")).toBe("User will move to Lisbon.");
  });

  it("resolves relative dates against occurred_at", () => {
    expect(resolveDates("I adopted a cat yesterday", at)).toBe("I adopted a cat on 2026-03-10");
    expect(resolveDates("we met last Monday", at)).toBe("we met on 2026-03-09");
    expect(resolveDates("the trip is next Friday", at)).toBe("the trip is on 2026-03-13");
    expect(resolveDates("I moved 3 days ago", at)).toBe("I moved on 2026-03-08");
    expect(resolveDates("I started last month", at)).toBe("I started in February 2026");
    expect(resolveDates("I graduated last year", at)).toBe("I graduated in 2025");
    expect(resolveDates("the exam is tomorrow", at)).toBe("the exam is on 2026-03-12");
  });

  it("extracts deduplicated atomic facts", () => {
    expect(extractFactsLocally("Yesterday I adopted a cat named Miso. I love sushi. I love sushi.", at)).toEqual(["On 2026-03-10 User adopted a cat named Miso.", "User loves sushi."]);
    expect(extractFactsLocally("Thanks! What time is it?", at)).toEqual([]);
  });

  it("answers by quoting the best memories, or says it has none", () => {
    expect(answerLocally({ question: "pet?", memories: [] })).toMatch(/don't have any memories/);
    const a = answerLocally({ question: "What pet?", memories: [{ text: "User adopted a cat named Miso.", distance: 0.2 }, { text: "User loves sushi.", distance: 0.6 }] });
    expect(a).toContain('"User adopted a cat named Miso."');
    expect(a).not.toContain("sushi");
  });
});

describe("a model's output is parsed strictly", () => {
  it("accepts the facts array (code fences tolerated)", () => {
    expect(parseFacts('{"facts": ["User likes tea."]}')).toEqual(["User likes tea."]);
    expect(parseFacts('```json\n{"facts": []}\n```')).toEqual([]);
    expect(parseAnswer('{"answer": "Miso."}')).toBe("Miso.");
  });
  it.each([
    ["not JSON", "Sure! Here are the facts: ...", /not JSON/],
    ["no content", "", /no content/],
    ["an array", '["User likes tea."]', /not a JSON object/],
    ["no facts field", '{"fact": "x"}', /no "facts" array/],
    ["a non-string fact", '{"facts": [42]}', /fact 0 is not a non-empty string/],
    ["an empty fact", '{"facts": ["  "]}', /fact 0 is not a non-empty string/],
    ["a fact with U+0000", '{"facts": ["a\\u0000b"]}', /fact 0 contains U\+0000/],
    ["too many facts", JSON.stringify({ facts: Array.from({ length: 51 }, (_, i) => `fact ${i}`) }), /51 facts/],
  ])("refuses %s", (_, content, message) => {
    expect(() => parseFacts(content)).toThrow(message);
  });
});

describe("near duplicates", () => {
  it("same meaning by vector, or close vectors with nearly the same keyed terms", () => {
    expect(isNearDuplicate(0.01, [], [])).toBe(true);
    expect(isNearDuplicate(0.2, [1, 2, 3, 4, 5], [1, 2, 3, 4, 5])).toBe(true);
    expect(isNearDuplicate(0.2, [1, 2, 3, 4, 5], [1, 2, 3, 9, 8])).toBe(false);
    expect(isNearDuplicate(0.4, [1, 2, 3], [1, 2, 3])).toBe(false);
  });
});
