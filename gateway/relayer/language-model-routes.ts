// POST /api/analyze and POST /api/ask (spec/relayer.md, language-model features). analyze: facts extracted from the
// text (the language-model port), each fact the namespace does not already state becomes its own remember job
// through the same command as POST /api/remember. ask: recall as POST /api/recall does, then an answer grounded in
// those memories.
import { randomUUID } from "node:crypto";
import type { Db } from "../../db/pool.ts";
import type { DecryptCredential, EmbeddingPort, LanguageModelPort } from "../../adapters/ports.ts";
import type { LexicalKeyring } from "../../adapters/lexical/keys.ts";
import { splitNewFacts } from "../../projections/relayer/near-duplicates.ts";
import { LIMITS, parseAnalyze, parseAsk, type RecallBody, type RememberBody } from "../../schemas/relayer/http.ts";
import { json, parseJsonObject, type Handler, type HttpServer, type Request, type Reply } from "../http.ts";
import type { Authenticated } from "./signed-auth.ts";
import { decryptCredential } from "./decrypt-credential.ts";

export interface LanguageModelDeps {
  readonly db: Db;
  readonly embedder: EmbeddingPort;
  readonly llm: LanguageModelPort;
  readonly lexical?: LexicalKeyring;
}

export interface RouteKit {
  readonly signed: (name: string, h: (req: Request, who: Authenticated) => Promise<Reply>) => Handler;
  readonly publishRemember: (who: Authenticated, item: RememberBody, correlationId: string, position?: number) => Promise<string>;
  readonly recall: (who: Authenticated, body: RecallBody, credential: DecryptCredential) => Promise<{ results: readonly { blob_id: string; text: string; distance: number }[] }>;
}

export function registerLanguageModelRoutes(server: HttpServer, deps: LanguageModelDeps, kit: RouteKit): void {
  server
    .route("post", "/api/analyze", kit.signed("analyze", async (req, who) => {
      const body = parseAnalyze(parseJsonObject(req.body));
      const extracted = await deps.llm.extractFacts(body.text, body.occurredAt);
      const unique = [...new Set(extracted)];
      const vectors = unique.length ? await deps.embedder.embed(unique) : [];
      const { fresh, skipped } = await splitNewFacts(deps.db, who.owner, body.namespace, unique, vectors, deps.lexical?.forOwner(who.owner));
      const correlationId = randomUUID();
      const jobIds = await Promise.all(fresh.map((text, position) => kit.publishRemember(who, { text, namespace: body.namespace }, correlationId, position)));
      // the fact's id is its memory's row id, which for a remember job is the job id (projections/relayer/memory-index.ts)
      const facts = fresh.map((text, i) => ({ text, id: jobIds[i], job_id: jobIds[i] }));
      return json(202, { job_ids: facts.map((f) => f.job_id), facts, fact_count: facts.length, status: "pending", owner: who.owner, skipped });
    }), { bodyLimit: LIMITS.bodyBytes })
    .route("post", "/api/ask", kit.signed("ask", async (req, who) => {
      const body = parseAsk(parseJsonObject(req.body));
      const recalled = await kit.recall(who, { ...body, query: body.question }, decryptCredential(req, "ask needs a decrypt credential"));
      const memories = recalled.results.map((m) => ({ blob_id: m.blob_id, text: m.text, distance: m.distance }));
      const answer = await deps.llm.answer({ question: body.question, memories });
      return json(200, { answer, memories_used: memories.length, memories });
    }), { bodyLimit: LIMITS.bodyBytes });
}
