// The language-model port without a model (the default when no provider key is set): facts by sentence and clause
// splitting, rewritten as third-person facts about "User" with relative dates resolved against when the text was
// said; answers that quote the best recalled memories. Deterministic and pure.
import type { AnswerInput, LanguageModelPort } from "../ports.ts";

const MODALS = new Set(["will", "would", "can", "could", "should", "shall", "might", "may", "must", "did", "didn't", "won't", "can't", "cannot", "used", "had", "was", "never", "always", "also", "just", "really", "still", "usually", "often", "sometimes", "recently"]);
const IRREGULAR: Record<string, string> = { am: "is", "'m": "is", have: "has", "'ve": "has", do: "does", go: "goes", "don't": "doesn't", was: "was", were: "was" };
const FILLER = /^(hi|hello|hey|thanks|thank you|ok|okay|sure|yes|no|bye|good (morning|evening|night))\b[\s!.,]*$/i;
const WEEKDAYS = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

const isoDate = (d: Date) => d.toISOString().slice(0, 10);
const addDays = (d: Date, n: number) => new Date(d.getTime() + n * 86_400_000);

/** Third person singular of a present-tense verb: likes, watches, studies. */
function thirdPerson(verb: string): string {
  const lower = verb.toLowerCase();
  if (IRREGULAR[lower]) return IRREGULAR[lower];
  if (MODALS.has(lower) || /ed$/.test(lower)) return verb;
  if (/(s|sh|ch|x|z|o)$/.test(lower)) return verb + "es";
  if (/[^aeiou]y$/.test(lower)) return verb.slice(0, -1) + "ies";
  return verb + "s";
}

/** First person to facts about "User": "I love my dog" → "User loves User's dog". */
export function toUserFact(clause: string): string {
  let s = clause.trim().replace(/^(and|but|so|also|then)\s+/i, "");
  s = s.replace(/^I('m| am)\b/i, "User is").replace(/^I('ve| have)\b/i, "User has").replace(/^I'd\b/i, "User would").replace(/^I'll\b/i, "User will");
  s = s.replace(/^I\s+([A-Za-z'’]+)/, (_, verb: string) => `User ${thirdPerson(verb)}`);
  s = s.replace(/^My\b/, "User's").replace(/\bmy\b/g, "User's").replace(/\bmine\b/g, "User's").replace(/\bmyself\b/g, "User").replace(/\bme\b/g, "User");
  s = s.replace(/\bI('m| am)\b/g, "User is").replace(/\bI\b/g, "User");
  s = s.replace(/[\s,;:.!]+$/, "");
  return s.charAt(0).toUpperCase() + s.slice(1) + ".";
}

/** Relative dates written out against `at`: "yesterday" → "on 2026-11-23". */
export function resolveDates(text: string, at: Date): string {
  const weekday = (name: string, direction: -1 | 1) => {
    const target = WEEKDAYS.indexOf(name.toLowerCase());
    let d = addDays(at, direction);
    while (d.getUTCDay() !== target) d = addDays(d, direction);
    return d;
  };
  return text
    .replace(/\byesterday\b/gi, () => `on ${isoDate(addDays(at, -1))}`)
    .replace(/\btoday\b|\btonight\b|\bthis morning\b|\bthis evening\b/gi, () => `on ${isoDate(at)}`)
    .replace(/\btomorrow\b/gi, () => `on ${isoDate(addDays(at, 1))}`)
    .replace(/\b(\d+|a|one|two|three|four|five|six|seven) days? ago\b/gi, (_, n: string) => `on ${isoDate(addDays(at, -wordNumber(n)))}`)
    .replace(/\b(\d+|a|one|two|three) weeks? ago\b/gi, (_, n: string) => `in the week of ${isoDate(addDays(at, -7 * wordNumber(n)))}`)
    .replace(/\blast week\b/gi, () => `in the week of ${isoDate(addDays(at, -7))}`)
    .replace(/\bnext week\b/gi, () => `in the week of ${isoDate(addDays(at, 7))}`)
    .replace(/\blast month\b/gi, () => {
      const d = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() - 1, 1));
      return `in ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
    })
    .replace(/\bnext month\b/gi, () => {
      const d = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1));
      return `in ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
    })
    .replace(/\blast year\b/gi, () => `in ${at.getUTCFullYear() - 1}`)
    .replace(/\bnext year\b/gi, () => `in ${at.getUTCFullYear() + 1}`)
    .replace(/\b(?:last|on|this past) (sunday|monday|tuesday|wednesday|thursday|friday|saturday)\b/gi, (_, day: string) => `on ${isoDate(weekday(day, -1))}`)
    .replace(/\bnext (sunday|monday|tuesday|wednesday|thursday|friday|saturday)\b/gi, (_, day: string) => `on ${isoDate(weekday(day, 1))}`);
}

function wordNumber(n: string): number {
  const words: Record<string, number> = { a: 1, one: 1, two: 2, three: 3, four: 4, five: 5, six: 6, seven: 7 };
  return words[n.toLowerCase()] ?? Number(n);
}

/** Sentences, then clauses joined by ";", ", and", ", but" or " but " that each stand alone. */
export function splitClauses(text: string): string[] {
  const sentences = text.split(/(?<=[.!?])\s+|\n+/).map((s) => s.trim()).filter(Boolean);
  const out: string[] = [];
  for (const s of sentences) {
    if (/\?\s*$/.test(s) || FILLER.test(s)) continue;
    for (const part of s.split(/;\s*|,\s*(?:and|but)\s+|\s+but\s+/i)) {
      const clause = part.trim();
      if (clause.split(/\s+/).length >= 3) out.push(clause);
    }
  }
  return out;
}

export function extractFactsLocally(text: string, occurredAt: Date): string[] {
  const facts = splitClauses(text).map((c) => toUserFact(resolveDates(c, occurredAt)));
  return [...new Set(facts)];
}

export function answerLocally({ question, memories }: AnswerInput): string {
  if (!memories.length) return "I don't have any memories that answer this.";
  const best = memories[0];
  // The memories close to the best one (within 0.05 cosine distance) are quoted with it.
  const close = memories.slice(1, 3).filter((m) => m.distance - best.distance <= 0.05);
  const quoted = [best, ...close].map((m) => `"${m.text}"`).join("; ");
  return `From your memories (for "${question.trim()}"): ${quoted}`;
}

export class LocalLanguageModel implements LanguageModelPort {
  readonly name = "local";
  readonly promptVersions = { extract: "local-2", ask: "local-2" };
  async extractFacts(text: string, occurredAt: Date): Promise<string[]> {
    return extractFactsLocally(text, occurredAt);
  }
  async answer(input: AnswerInput): Promise<string> {
    return answerLocally(input);
  }
}
