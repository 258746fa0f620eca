// The language-model port over any OpenAI-compatible chat completions endpoint (the `openai` package). The model's
// output is parsed strictly: anything but the JSON shape asked for is an `invalid` PortError, so a malformed answer
// never becomes a stored fact. Timeouts and retries are the SDK's.
import OpenAI from "openai";
import { PortError, type AnswerInput, type LanguageModelPort } from "../ports.ts";
import { toPortError } from "../embeddings/openai.ts";
import { unsafeTextReason } from "../../schemas/text.ts";

export interface OpenAILanguageModelOptions {
  readonly apiBase?: string;
  readonly apiKey?: string;
  readonly model: string;
  readonly timeoutMs?: number;
  readonly maxRetries?: number;
}

export const MAX_FACTS = 50;
const MAX_FACT_CHARS = 2_000;
const PORT = "language-model";

const EXTRACT_PROMPT = `You extract durable facts about the user from what they said.
Return JSON: {"facts": ["..."]}. Each fact is one short, self-contained sentence in the third person about "User"
(e.g. "User's sister lives in Porto."). Write relative dates as absolute dates using the reference date given.
Leave out greetings, questions and anything that is not a fact. No facts: {"facts": []}.`;
const ASK_PROMPT = `You answer the user's question using only the memories given. Quote or paraphrase them; if they do not
contain the answer, say you do not know. Return JSON: {"answer": "..."}.`;

function parseJsonObject(content: string | null | undefined): Record<string, unknown> {
  if (!content) throw new PortError(PORT, "invalid", "the model returned no content");
  let v: unknown;
  try {
    v = JSON.parse(content.trim().replace(/^```(?:json)?\s*|\s*```$/g, ""));
  } catch {
    throw new PortError(PORT, "invalid", "the model's answer is not JSON");
  }
  if (!v || typeof v !== "object" || Array.isArray(v)) throw new PortError(PORT, "invalid", "the model's answer is not a JSON object");
  return v as Record<string, unknown>;
}

/** The facts of a model answer, or why it is unusable. */
export function parseFacts(content: string | null | undefined): string[] {
  const facts = parseJsonObject(content).facts;
  if (!Array.isArray(facts)) throw new PortError(PORT, "invalid", 'the model\'s answer has no "facts" array');
  if (facts.length > MAX_FACTS) throw new PortError(PORT, "invalid", `the model returned ${facts.length} facts (at most ${MAX_FACTS})`);
  return facts.map((f, i) => {
    if (typeof f !== "string" || !f.trim()) throw new PortError(PORT, "invalid", `fact ${i} is not a non-empty string`);
    if (f.length > MAX_FACT_CHARS) throw new PortError(PORT, "invalid", `fact ${i} is longer than ${MAX_FACT_CHARS} characters`);
    if (unsafeTextReason(f)) throw new PortError(PORT, "invalid", `fact ${i} ${unsafeTextReason(f)}`);
    return f.trim();
  });
}

export function parseAnswer(content: string | null | undefined): string {
  const answer = parseJsonObject(content).answer;
  if (typeof answer !== "string" || !answer.trim()) throw new PortError(PORT, "invalid", 'the model\'s answer has no "answer" string');
  return answer.trim();
}

export class OpenAILanguageModel implements LanguageModelPort {
  readonly name: string;
  readonly promptVersions = { extract: "openai-1", ask: "openai-1" };
  private readonly client: OpenAI;

  constructor(private readonly opts: OpenAILanguageModelOptions) {
    this.name = `openai:${opts.model}`;
    this.client = new OpenAI({ apiKey: opts.apiKey ?? "unused", baseURL: opts.apiBase, timeout: opts.timeoutMs ?? 30_000, maxRetries: opts.maxRetries ?? 1 });
  }

  private async complete(system: string, user: string): Promise<string | null | undefined> {
    try {
      const r = await this.client.chat.completions.create({
        model: this.opts.model,
        temperature: 0,
        response_format: { type: "json_object" },
        messages: [
          { role: "system", content: system },
          { role: "user", content: user },
        ],
      });
      return r.choices?.[0]?.message?.content;
    } catch (e) {
      throw toPortError(e, PORT);
    }
  }

  async extractFacts(text: string, occurredAt: Date): Promise<string[]> {
    return parseFacts(await this.complete(EXTRACT_PROMPT, `Reference date: ${occurredAt.toISOString()}\n\n${text}`));
  }

  async answer(input: AnswerInput): Promise<string> {
    const memories = input.memories.map((m, i) => `${i + 1}. ${m.text}`).join("\n") || "(none)";
    return parseAnswer(await this.complete(ASK_PROMPT, `Memories:\n${memories}\n\nQuestion: ${input.question}`));
  }
}
