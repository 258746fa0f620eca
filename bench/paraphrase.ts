// Paraphrase recall through the real relayer API with the default configuration (loadConfig of an empty
// environment: USE-lite and hybrid ranking without a key): the facts of bench/paraphrase-set.ts remembered in one
// namespace, each queried by its paraphrase (no content word in common); hit@1 and hit@5. Targets: ≥ 0.85, ≥ 0.95.
//   node --import tsx bench/paraphrase.ts [--embedder hashing|use-lite] [--ranking hybrid|cosine] [--keep-dense-top 0..1]
import { startTestStack } from "../test/support/stack.ts";
import { loadConfig } from "../config/env.ts";
import { PARAPHRASE_SET } from "./paraphrase-set.ts";

const args = process.argv.slice(2);
const value = (n: string) => (args.indexOf(n) >= 0 ? args[args.indexOf(n) + 1] : undefined);
const defaults = loadConfig({});
const keep = value("--keep-dense-top");
const env = {
  RATE_LIMIT_DISABLED: "true",
  MEMRELAY_EMBEDDER: value("--embedder") ?? defaults.embedder,
  MEMRELAY_RECALL_RANKING: value("--ranking") ?? defaults.recallRanking,
  ...(keep !== undefined ? { MEMRELAY_HYBRID_KEEP_DENSE_TOP: keep } : {}),
};

/** hit@1 and hit@5 of the paraphrase set against a started stack configured by `env`. */
export async function paraphraseRecall(stackEnv: Record<string, string>): Promise<{ n: number; hit1: number; hit5: number; misses: string[] }> {
  const t = await startTestStack(stackEnv);
  try {
    const client = await t.client();
    for (let i = 0; i < PARAPHRASE_SET.length; i += 20) {
      const accepted = await client.rememberBulk(PARAPHRASE_SET.slice(i, i + 20).map((c) => ({ text: c.fact, namespace: "paraphrase" })));
      for (const id of accepted.job_ids) await client.waitForJob(id, 120_000);
    }
    while (t.stack.relayer.projections.some((p) => p.pending > 0)) await new Promise((r) => setTimeout(r, 100));
    let hit1 = 0, hit5 = 0;
    const misses: string[] = [];
    for (const c of PARAPHRASE_SET) {
      const r = await client.recall(c.query, { namespace: "paraphrase", limit: 5 });
      const rank = r.results.findIndex((x) => x.text === c.fact);
      if (rank === 0) hit1++;
      else misses.push(`"${c.query}" → rank ${rank < 0 ? ">5" : rank + 1} (first: "${r.results[0]?.text}")`);
      if (rank >= 0) hit5++;
    }
    const n = PARAPHRASE_SET.length;
    return { n, hit1: hit1 / n, hit5: hit5 / n, misses };
  } finally {
    await t.teardown();
  }
}

const r = await paraphraseRecall(env);
console.log(`embedder ${env.MEMRELAY_EMBEDDER}, ranking ${env.MEMRELAY_RECALL_RANKING}: ${r.n} facts, hit@1 ${r.hit1.toFixed(3)}, hit@5 ${r.hit5.toFixed(3)}`);
for (const m of r.misses) console.log(`  miss@1: ${m}`);
