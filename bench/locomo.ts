// `npm run bench:locomo`: retrieval quality on LoCoMo (../shared/data/README.md) through the real relayer API.
// A private nats-server and a fresh database on the native Postgres; the local stack in this process (chain, key
// servers, blob store, relayer with its default settings); one account; one namespace per conversation and one
// memory per turn ("Speaker: text" plus " [image: caption]" when the turn shares an image), remembered with signed
// bulk requests in conversation order; then every question with usable evidence is recalled (signed, with an
// exported session key: the relayer decrypts) and scored: evidence recall@5 and @10, hit@10 and MRR (over the top
// 100), per category and overall. Writes bench/LOCOMO.md.
//
// Rankings compared on the same ingested data, each served by its own gateway process role:
//   cosine   MEMRELAY_RECALL_RANKING=cosine (the spec's plain cosine order over the dense vectors)
//   bm25     hybrid ranking without the context spread (MEMRELAY_HYBRID_CONTEXT=none)
//   hybrid   the default: keyed BM25 spread to conversational neighbours, fused with the vector
//
//   node --import tsx bench/locomo.ts [--quick] [--no-save] [--variants cosine,bm25,hybrid] [--concurrency 8]
// Environment: MEMRELAY_EMBEDDER / MEMRELAY_EMBEDDING_DIMS (default: the shipped default, USE-lite), LOCOMO_PATH, TEST_DATABASE_URL.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cpus } from "node:os";
import { execSync } from "node:child_process";
import { startTestStack } from "../test/support/stack.ts";
import { MemrelayClient } from "../client/memrelay-client.ts";
import { cachedSessionProvider } from "../client/session-cache.ts";
import { loadConfig } from "../config/env.ts";
import { silentLogger } from "../config/logger.ts";
import { startWorker } from "../runtime/worker.ts";
import { LOCOMO_PATH, loadLocomo, type Conversation } from "./locomo-offline.ts";
import { repoRoot } from "./lib/processes.ts";

const args = process.argv.slice(2);
const flag = (n: string) => args.includes(n);
const value = (n: string) => (args.indexOf(n) >= 0 ? args[args.indexOf(n) + 1] : undefined);
const quick = flag("--quick");
const concurrency = Number(value("--concurrency") ?? 8);
const VARIANTS: Record<string, { label: string; env: Record<string, string> }> = {
  cosine: { label: "dense cosine only (MEMRELAY_RECALL_RANKING=cosine)", env: { MEMRELAY_RECALL_RANKING: "cosine" } },
  bm25: { label: "keyed BM25 (+ dense), no context (MEMRELAY_HYBRID_CONTEXT=none)", env: { MEMRELAY_RECALL_RANKING: "hybrid", MEMRELAY_HYBRID_CONTEXT: "none" } },
  hybrid: { label: "**default**: keyed BM25 + conversational context (+ dense)", env: {} },
};
const variants = (value("--variants") ?? "cosine,bm25,hybrid").split(",").map((s) => s.trim());
for (const v of variants) if (!VARIANTS[v]) throw new Error(`unknown variant ${v}; known: ${Object.keys(VARIANTS).join(", ")}`);

const log = (m: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${m}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function pooled<T>(items: readonly T[], n: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i], i);
    }
  }));
}

interface Acc { n: number; r5: number; r10: number; hit10: number; mrr: number }
const CATEGORY: Record<number, string> = { 1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial" };

let convs: Conversation[] = loadLocomo(LOCOMO_PATH, true);
if (quick) convs = convs.slice(0, 2);
const turns = convs.reduce((s, c) => s + c.turns.length, 0);
const questions = convs.reduce((s, c) => s + c.queries.length, 0);
log(`LoCoMo: ${convs.length} conversations, ${turns} turns, ${questions} questions with usable evidence`);

// The default configuration (loadConfig of an empty environment: USE-lite without a key) unless MEMRELAY_EMBEDDER /
// MEMRELAY_EMBEDDING_DIMS say otherwise.
const embedderEnv: Record<string, string> = { MEMRELAY_EMBEDDER: process.env.MEMRELAY_EMBEDDER ?? loadConfig({}).embedder };
if (process.env.MEMRELAY_EMBEDDING_DIMS) embedderEnv.MEMRELAY_EMBEDDING_DIMS = process.env.MEMRELAY_EMBEDDING_DIMS;
log(`embedder: ${embedderEnv.MEMRELAY_EMBEDDER}`);
const t = await startTestStack({ RATE_LIMIT_DISABLED: "true", ...embedderEnv });
const stops: (() => Promise<void>)[] = [];
try {
  const who = await t.stack.createIdentity("locomo");
  // One exported session key per TTL (at most 30 minutes), renewed shortly before it expires.
  const header = cachedSessionProvider({ delegateSecretKey: who.delegateSecretKey, packageId: t.stack.encryptionStack.packageId, rpcUrl: t.stack.encryptionStack.rpcUrl, ttlMin: 30 });
  const clientAt = (baseUrl: string) => new MemrelayClient({ baseUrl, delegatePrivateKey: who.delegateSecretKey, accountId: who.accountId, encryptionSession: header });
  const main = clientAt(t.stack.relayerUrl);

  // ---- ingest: bulk requests in turn order, conversations in parallel
  const t0 = performance.now();
  const jobTurn = new Map<string, { conv: number; turn: string }>();
  await Promise.all(convs.map(async (c, ci) => {
    for (let i = 0; i < c.turns.length; i += 20) {
      const chunk = c.turns.slice(i, i + 20);
      const r = await main.rememberBulk(chunk.map((x) => ({ text: x.text, namespace: `locomo-${ci}` })));
      r.job_ids.forEach((id, k) => jobTurn.set(id, { conv: ci, turn: chunk[k].id }));
    }
  }));
  const accepted = (performance.now() - t0) / 1000;
  log(`accepted ${jobTurn.size} remembers in ${accepted.toFixed(1)} s; waiting for the jobs ...`);
  const blobTurn = new Map<string, { conv: number; turn: string }>();
  let pending = [...jobTurn.keys()];
  let failed = 0;
  while (pending.length) {
    const still: string[] = [];
    for (let i = 0; i < pending.length; i += 200) {
      const st = await main.bulkStatus(pending.slice(i, i + 200));
      for (const r of st.results) {
        if (r.status === "done" && r.blob_id) blobTurn.set(r.blob_id, jobTurn.get(r.job_id)!);
        else if (r.status === "failed") failed++;
        else still.push(r.job_id);
      }
    }
    pending = still;
    if (pending.length) {
      log(`  ${blobTurn.size}/${jobTurn.size} done, ${failed} failed`);
      await sleep(2_000);
    }
  }
  // Recall reads the projections: wait until they have applied everything the jobs appended.
  while (t.stack.relayer.projections.some((p) => p.pending > 0)) await sleep(200);
  await sleep(1_500);
  const ingest = (performance.now() - t0) / 1000;
  log(`ingested ${blobTurn.size} memories (${failed} failed) in ${ingest.toFixed(1)} s (${(blobTurn.size / ingest).toFixed(0)} memories/s)`);

  // ---- one gateway per ranking variant, on the same data
  const gateways = new Map<string, MemrelayClient>();
  for (const v of variants) {
    if (v === "hybrid") {
      gateways.set(v, main);
      continue;
    }
    const env = { ...t.stack.workerEnv, PORT: "0", HOST: "127.0.0.1", RATE_LIMIT_DISABLED: "true", MEMRELAY_DATA_DIR: t.stack.config.dataDir, ...VARIANTS[v].env };
    const w = await startWorker(loadConfig(env), { gateway: true }, silentLogger, env);
    stops.push(() => w.stop());
    gateways.set(v, clientAt(`http://127.0.0.1:${w.relayer.port}`));
  }

  // ---- recall every question
  const results: Record<string, { acc: Map<string, Acc>; ms: number[]; errors: number }> = {};
  const queries = convs.flatMap((c, ci) => c.queries.map((q) => ({ ci, q })));
  for (const v of variants) {
    const client = gateways.get(v)!;
    const acc = new Map<string, Acc>();
    const ms: number[] = [];
    let errors = 0;
    const add = (k: string, r5: number, r10: number, hit: number, rr: number) => {
      const a = acc.get(k) ?? { n: 0, r5: 0, r10: 0, hit10: 0, mrr: 0 };
      a.n++, (a.r5 += r5), (a.r10 += r10), (a.hit10 += hit), (a.mrr += rr);
      acc.set(k, a);
    };
    const t1 = performance.now();
    await pooled(queries, concurrency, async ({ ci, q }) => {
      const a = performance.now();
      let ids: string[] = [];
      try {
        const r = await client.recall(q.question, { namespace: `locomo-${ci}`, limit: 100 });
        ids = r.results.map((x) => blobTurn.get(x.blob_id)).filter((x) => x && x.conv === ci).map((x) => x!.turn);
        if (r.dropped_count && errors++ < 3) log(`  ${v}: ${r.dropped_count} results dropped (blob read or decryption failed)`);
      } catch (err) {
        if (errors++ < 3) log(`  ${v}: recall failed: ${err instanceof Error ? err.message : String(err)}`);
      }
      ms.push(performance.now() - a);
      const ev = new Set(q.evidence);
      let first = 0, in5 = 0, in10 = 0;
      ids.forEach((id, r) => {
        if (!ev.has(id)) return;
        if (!first) first = r + 1;
        if (r < 5) in5++;
        if (r < 10) in10++;
      });
      const m = [in5 / ev.size, in10 / ev.size, in10 > 0 ? 1 : 0, first ? 1 / first : 0] as const;
      add("all", ...m);
      add(`cat${q.category}`, ...m);
    });
    const secs = (performance.now() - t1) / 1000;
    for (const a of acc.values()) (a.r5 /= a.n), (a.r10 /= a.n), (a.hit10 /= a.n), (a.mrr /= a.n);
    results[v] = { acc, ms, errors };
    const all = acc.get("all")!;
    log(`${v.padEnd(7)} R@5 ${all.r5.toFixed(3)}  R@10 ${all.r10.toFixed(3)}  hit@10 ${all.hit10.toFixed(3)}  MRR ${all.mrr.toFixed(3)}  (${queries.length} recalls in ${secs.toFixed(1)} s, ${errors} errors)`);
  }

  // ---- report
  const pctl = (xs: number[], p: number) => {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
  };
  const sh = (c: string) => {
    try {
      return execSync(c, { cwd: repoRoot, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    } catch {
      return "unknown";
    }
  };
  const f = (x: number) => x.toFixed(3);
  const lines: string[] = [
    "# LoCoMo retrieval quality through the relayer API",
    "",
    `Generated by \`npm run bench:locomo${args.length ? " -- " + args.join(" ") : ""}\` on ${new Date().toISOString()} (git ${sh("git rev-parse --short HEAD")}${sh("git status --porcelain") ? " + uncommitted changes" : ""}; ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}).`,
    "",
    `Data: ${convs.length} conversations, ${turns} turns (memories), ${questions} questions with usable evidence (malformed evidence strings normalised as ../shared/data/README.md says). One namespace per conversation, one memory per turn ("Speaker: text" plus the image caption), remembered through signed bulk requests in conversation order (${blobTurn.size} done, ${failed} failed, ${ingest.toFixed(0)} s). Embedder: ${t.stack.embedder.name}. Every question recalled through the API (limit 100; the relayer decrypts); recall@k = share of the question's evidence turns in the top k, hit@10 = at least one in the top 10, MRR = 1 / rank of the first evidence turn.`,
    "",
    "## Overall",
    "",
    "| ranking | R@5 | R@10 | hit@10 | MRR |",
    "|---|---|---|---|---|",
    ...variants.map((v) => {
      const a = results[v].acc.get("all")!;
      return `| ${VARIANTS[v].label} | ${f(a.r5)} | ${f(a.r10)} | ${f(a.hit10)} | ${f(a.mrr)} |`;
    }),
    "",
    "Figures to beat (../shared/data/README.md, exact search offline): BM25 over plaintext R@10 0.609; USE-lite + BM25 fusion 0.647; USE-lite alone 0.360. Goal: R@10 ≥ 0.70.",
    "",
    "## Per category (R@5 / R@10 / MRR)",
    "",
    `| ranking | ${[1, 2, 3, 4, 5].filter((c) => results[variants[0]].acc.has(`cat${c}`)).map((c) => `${c} ${CATEGORY[c]} (n=${results[variants[0]].acc.get(`cat${c}`)!.n})`).join(" | ")} |`,
    `|---|${[1, 2, 3, 4, 5].filter((c) => results[variants[0]].acc.has(`cat${c}`)).map(() => "---").join("|")}|`,
    ...variants.map((v) => `| ${v} | ${[1, 2, 3, 4, 5].filter((c) => results[v].acc.has(`cat${c}`)).map((c) => {
      const a = results[v].acc.get(`cat${c}`)!;
      return `${f(a.r5)} / ${f(a.r10)} / ${f(a.mrr)}`;
    }).join(" | ")} |`),
    "",
    "## Request time (informative)",
    "",
    `Whole recall requests with limit 100 (signature, ranking, 100 ciphertext reads and decryptions), ${concurrency} concurrent clients, embedding included. The latency targets (limit 10, 10,000 memories, 200,000 in the index) are measured by \`npm run bench -- --only recall\`.`,
    "",
    "| ranking | p50 | p99 | errors |",
    "|---|---|---|---|",
    ...variants.map((v) => `| ${v} | ${pctl(results[v].ms, 50).toFixed(1)} ms | ${pctl(results[v].ms, 99).toFixed(1)} ms | ${results[v].errors} |`),
    "",
  ];
  if (!flag("--no-save")) {
    writeFileSync(join(repoRoot, "bench", "LOCOMO.md"), lines.join("\n"));
    log("wrote bench/LOCOMO.md");
  } else console.log(lines.join("\n"));
} finally {
  for (const s of stops) await s().catch(() => undefined);
  await t.teardown();
}
process.exit(0);
