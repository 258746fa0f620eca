// Shared state of one `bench/run.ts` invocation: options, the main (hashing) environment started on first use,
// the queried owner, and seeding helpers the sections share (real memories through the API; synthetic
// `job.indexed` commits of other owners on the event log).
import { randomBytes, randomUUID } from "node:crypto";
import { Agent } from "undici";
import { ConcurrencyConflict, EventStore } from "../../eventlog/event-store.ts";
import { STREAMS } from "../../eventlog/subjects.ts";
import { readCheckpoint } from "../../projections/runtime.ts";
import { MEMORY_INDEX } from "../../projections/relayer/memory-index.ts";
import { LEXICAL_INDEX } from "../../projections/relayer/lexical-index.ts";
import { JOB_STATUS } from "../../projections/relayer/job-status.ts";
import { HashingEmbedder } from "../../adapters/embeddings/hashing.ts";
import { JOB_EVENTS, JOB_VECTOR_EVENT_VERSION, type JobIndexed } from "../../schemas/relayer/remember-job.ts";
import { encodeVectorF32 } from "../../schemas/vector-wire.ts";
import { LexicalKeyring, OwnerLexicalKey, parseLexicalSecret } from "../../adapters/lexical/keys.ts";
import { documentTerms } from "../../adapters/lexical/terms.ts";
import { RequestSigner } from "../../client/signer.ts";
import { BenchEnv, type Role } from "./env.ts";
import { MemorySampler, OTHERS, cpuShares, formatShares, latestSeen, type CpuReading, type IdentityWire } from "./processes.ts";
import { memoryTexts, vocabulary } from "./texts.ts";
import { closedLoop, newPool, signedPost } from "./load.ts";
import { sleep, until } from "./stats.ts";

export interface Options {
  readonly only?: Set<string>;
  readonly quick: boolean;
  readonly encryptedNats: boolean;
  readonly cpuProf: boolean;
  readonly profileDir: string;
}

/** How often a timed window reads every tracked process's CPU time. */
const CPU_SAMPLE_MS = 250;

export const log = (msg: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${msg}`);

export class Ctx {
  readonly sampler = new MemorySampler(500);
  private main?: BenchEnv;
  private q?: IdentityWire;
  /** Owners and rows of synthetic commits appended so far (main environment). */
  synthetic = { rows: 0, lastSeq: 0, appendSeconds: 0 };
  /** Real jobs driven to done in the main environment (each has one 2-event commit and one 1-event commit). */
  readonly layout = new Set<string>();
  /** CPU share of processes outside this run during each timed window (1.0 = one core). */
  readonly foreign: number[] = [];
  /** Environments a section started itself (not the main one): torn down with the run when it is interrupted. */
  private readonly owned = new Set<{ teardown(): Promise<void> }>();
  /** How long a timed window may wait for other processes on the machine to calm down (MEMRELAY_BENCH_QUIET_WAIT_MS). */
  private quietBudgetMs = Number(process.env.MEMRELAY_BENCH_QUIET_WAIT_MS ?? 60_000);

  constructor(readonly opts: Options) {
    this.sampler.track("bench (load generator, observer)", process.pid);
    this.sampler.start();
  }

  /** Scales a count down for --quick smoke runs. */
  n(full: number, quick: number): number {
    return this.opts.quick ? quick : full;
  }

  workerNodeArgs(): string[] {
    return this.opts.cpuProf ? ["--cpu-prof", `--cpu-prof-dir=${this.opts.profileDir}`] : [];
  }

  async env(roles: Role[] = ["gateway", "projections", "actors"]): Promise<BenchEnv> {
    if (!this.main) {
      log("starting the main environment (nats-server, fresh database, services process) ...");
      this.main = await BenchEnv.start({ embedder: "hashing", encryptedNats: this.opts.encryptedNats, label: "main", workerNodeArgs: this.workerNodeArgs() }, this.sampler);
    }
    for (const r of roles) if (!this.main.workers.has(r)) await this.main.startRole(r);
    return this.main;
  }

  async owner(): Promise<IdentityWire> {
    const env = await this.env([]);
    this.q ??= await env.identity("bench-queried-owner");
    return this.q;
  }

  /** Runs `fn` and reports each process's CPU use over it (1.0 = one core busy) and what the rest of the machine used. */
  async cpuWindow<T>(fn: () => Promise<T>): Promise<{ result: T; cpu: string; shares: { label: string; share: number }[]; seconds: number; perOp: (ops: number) => string; totalMsPerOp: (ops: number) => number }> {
    const a = await this.sampler.cpu();
    const t = performance.now();
    // Readings during the window too: what ends before the window does (see latestSeen) still counts.
    const during: CpuReading[] = [];
    const every = setInterval(() => void this.sampler.cpu().then((r) => during.push(r)), CPU_SAMPLE_MS);
    const result = await fn().finally(() => clearInterval(every));
    const seconds = (performance.now() - t) / 1000;
    const shares = cpuShares(a, latestSeen([...during, await this.sampler.cpu()]), seconds);
    this.foreign.push(shares.find((x) => x.label === OTHERS)?.share ?? 0);
    const ours = shares.filter((x) => x.label !== OTHERS && !x.label.startsWith("machine total"));
    const total = ours.reduce((s, x) => s + x.share, 0);
    /** CPU milliseconds per operation over all of our processes. */
    const totalMsPerOp = (ops: number) => (total * seconds * 1000) / ops;
    /** CPU milliseconds per operation of each of our processes, and their sum: a capacity figure that other load on the machine does not change much. */
    const perOp = (ops: number) => {
      return ours.map((x) => `${x.label} ${((x.share * seconds * 1000) / ops).toFixed(3)}`).join(", ") + ` · sum ${((total * seconds * 1000) / ops).toFixed(3)} ms (⇒ ≤ ${Math.round((2 * ops) / (total * seconds)).toLocaleString("en-US")}/s on 2 cores)`;
    };
    return { result, cpu: formatShares(shares), shares, seconds, perOp, totalMsPerOp };
  }

  /**
   * Waits (up to `maxWaitMs`) until processes outside this run use less than `threshold` of a core, so that a
   * timed window does not share the 2 cores with someone else's work; returns that share (always reported).
   */
  async quiet(maxWaitMs = this.quietBudgetMs, threshold = 0.15): Promise<number> {
    const deadline = Date.now() + maxWaitMs;
    let warned = false;
    for (;;) {
      const a = await this.sampler.cpu();
      await sleep(2_000);
      const others = cpuShares(a, await this.sampler.cpu(), 2).find((x) => x.label === OTHERS)?.share ?? 0;
      if (others < threshold) return others;
      if (Date.now() > deadline) {
        log(`  the machine is still busy with other processes (${Math.round(others * 100)} % of a core); measuring anyway`);
        // It stays busy: do not wait as long before the next windows.
        this.quietBudgetMs = Math.min(this.quietBudgetMs, 15_000);
        return others;
      }
      if (!warned) log(`  other processes use ${Math.round(others * 100)} % of a core; waiting for a quiet machine (up to ${Math.round(maxWaitMs / 1000)} s) ...`);
      warned = true;
    }
  }

  /** Runs `fn` with an environment of its own that a run's teardown (Ctrl-C included) also stops; stops it after `fn`. */
  async withOwnEnv<E extends { teardown(): Promise<void> }, T>(env: E, fn: (env: E) => Promise<T>): Promise<T> {
    this.owned.add(env);
    try {
      return await fn(env);
    } finally {
      this.owned.delete(env);
      await env.teardown();
    }
  }

  async teardown(): Promise<void> {
    for (const env of this.owned) await env.teardown().catch(() => undefined);
    this.owned.clear();
    await this.main?.teardown();
    this.main = undefined;
    this.sampler.stop();
  }
}

// ---------------------------------------------------------------- queries on the read models

/** NATS messages per operation between two readings of nats-server's counters. */
export function natsPerOp(a: { in: number; out: number; inBytes: number; outBytes: number }, b: { in: number; out: number; inBytes: number; outBytes: number }, ops: number): string {
  return `${((b.in - a.in) / ops).toFixed(1)} messages in (${Math.round((b.inBytes - a.inBytes) / ops).toLocaleString("en-US")} B), ${((b.out - a.out) / ops).toFixed(1)} out (${Math.round((b.outBytes - a.outBytes) / ops).toLocaleString("en-US")} B)`;
}

/** "EVT 2.0, KV_snapshots 1.0, ..." appends per operation between two `streamSeqs()` readings. */
export function appendsPerOp(a: Map<string, number>, b: Map<string, number>, ops: number): string {
  return [...b]
    .map(([name, seq]) => [name, (seq - (a.get(name) ?? 0)) / ops] as const)
    .filter(([, v]) => v > 0.005)
    .sort((x, y) => y[1] - x[1])
    .map(([name, v]) => `${name} ${v.toFixed(2)}`)
    .join(", ");
}

export async function jobCounts(env: BenchEnv, owner: string, namespace: string): Promise<{ done: number; failed: number }> {
  const r = await env.db.query<{ done: string; failed: string }>(
    "SELECT count(*) FILTER (WHERE status = 'done') AS done, count(*) FILTER (WHERE status = 'failed') AS failed FROM remember_jobs WHERE owner = $1 AND namespace = $2",
    [owner, namespace],
  );
  return { done: Number(r.rows[0].done), failed: Number(r.rows[0].failed) };
}

export async function indexedCount(env: BenchEnv, owner: string, namespace: string): Promise<number> {
  const r = await env.db.query<{ n: string }>("SELECT count(*) AS n FROM memories WHERE owner = $1 AND namespace = $2", [owner, namespace]);
  return Number(r.rows[0].n);
}

/** Waits until both projections have applied stream sequence `seq`. */
export async function waitProjections(env: BenchEnv, seq: number, timeoutMs: number, names = [MEMORY_INDEX, LEXICAL_INDEX, JOB_STATUS]): Promise<void> {
  await until(async () => {
    for (const n of names) if ((await readCheckpoint(env.db, n)) < seq) return false;
    return true;
  }, timeoutMs, `projections to reach sequence ${seq}`, 100);
}

export async function lastEventSeq(env: BenchEnv): Promise<number> {
  const info = await env.log.jsm.streams.info(STREAMS.events);
  return info.state.last_seq;
}

// ---------------------------------------------------------------- real memories through the API

export interface SubmitTimeline {
  readonly submitSeconds: number;
  readonly firstSubmitAt: number;
  readonly lastDoneAt: number;
  /** (ms since first submit, done count) samples. */
  readonly timeline: [number, number][];
  readonly done: number;
  readonly failed: number;
  readonly jobIds: string[];
  readonly httpErrors: number;
}

/**
 * Submits `texts` as signed bulk remembers (20 per request, `concurrency` requests in flight) for `who` in
 * `namespace`, and polls the job-status read model every `pollMs` until every job is done or failed.
 */
export async function submitBulkAndWait(env: BenchEnv, who: IdentityWire, namespace: string, texts: readonly string[], opts: { concurrency?: number; pollMs?: number; timeoutMs?: number; progress?: boolean } = {}): Promise<SubmitTimeline> {
  const signer = new RequestSigner(Buffer.from(who.delegateSecretKeyHex, "hex"), who.accountId);
  const reqs = [];
  for (let i = 0; i < texts.length; i += 20) reqs.push(signedPost(signer, "/api/remember/bulk", { items: texts.slice(i, i + 20).map((text) => ({ text, namespace })) }));
  const base = await jobCounts(env, who.owner, namespace);
  const pool = newPool(env.relayerUrl, opts.concurrency ?? 8);
  const t0 = performance.now();
  const timeline: [number, number][] = [];
  let submitted = false;
  const submit = closedLoop(pool, reqs, opts.concurrency ?? 8, { expect: 202, keepBodies: true }).then((r) => {
    submitted = true;
    return r;
  });
  let counts = base;
  let lastProgress = 0;
  let lastDoneAt = t0;
  const deadline = t0 + (opts.timeoutMs ?? 300_000);
  for (;;) {
    await sleep(opts.pollMs ?? 100);
    counts = await jobCounts(env, who.owner, namespace);
    const now = performance.now();
    const done = counts.done - base.done;
    if (!timeline.length || timeline[timeline.length - 1][1] !== done) lastDoneAt = now;
    timeline.push([now - t0, done]);
    if (opts.progress && now - lastProgress > 2_000) {
      lastProgress = now;
      log(`  ${namespace}: ${done}/${texts.length} done (${counts.failed - base.failed} failed), ${((now - t0) / 1000).toFixed(1)} s`);
    }
    if (submitted && done + counts.failed - base.failed >= texts.length) break;
    if (now > deadline) break;
  }
  const res = await submit;
  await pool.close();
  const jobIds = (res.bodies ?? []).flatMap((b) => ((b as { job_ids?: string[] } | undefined)?.job_ids ?? []));
  return {
    submitSeconds: res.seconds,
    firstSubmitAt: t0,
    lastDoneAt,
    timeline,
    done: counts.done - base.done,
    failed: counts.failed - base.failed,
    jobIds,
    httpErrors: res.errors,
  };
}

/** Makes sure `who` has at least `n` real memories in `namespace` (remembered through the API). */
export async function ensureReal(env: BenchEnv, who: IdentityWire, namespace: string, n: number, textOffset: number): Promise<void> {
  const have = await indexedCount(env, who.owner, namespace);
  if (have >= n) return;
  log(`seeding ${n - have} real memories into ${namespace} through the API ...`);
  const r = await submitBulkAndWait(env, who, namespace, memoryTexts(n - have, textOffset + have), { progress: true, timeoutMs: 600_000 });
  if (r.failed || r.httpErrors) log(`  warning: ${r.failed} failed jobs, ${r.httpErrors} HTTP errors`);
  await until(async () => (await indexedCount(env, who.owner, namespace)) >= n, 60_000, `${n} index rows in ${namespace}`);
}

// ---------------------------------------------------------------- synthetic job.indexed commits

const hex = (bytes: number) => "0x" + randomBytes(bytes).toString("hex");
const blobId = () => randomBytes(32).toString("base64url").slice(0, 43);

/** Synthetic memories: random word sequences drawn from the corpus' vocabulary, with their hashing embeddings. */
function syntheticMemories(count: number, dims: number): { text: string; vector_f32: string }[] {
  const vocab = vocabulary();
  const embedder = new HashingEmbedder({ dims });
  const out: { text: string; vector_f32: string }[] = [];
  let seed = 12345;
  const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
  for (let i = 0; i < count; i++) {
    const words = 6 + Math.floor(rnd() * 18);
    const text = Array.from({ length: words }, () => vocab[Math.floor(rnd() * vocab.length)]).join(" ");
    out.push({ text, vector_f32: encodeVectorF32(embedder.embedOne(text)) });
  }
  return out;
}

/** An owner's lexical key with its token hashes memoised (synthetic texts reuse one vocabulary). */
class MemoKey extends OwnerLexicalKey {
  private readonly memo = new Map<string, number>();
  constructor(private readonly inner: OwnerLexicalKey) {
    super(Buffer.alloc(0));
  }
  override hash(token: string): number {
    let h = this.memo.get(token);
    if (h === undefined) this.memo.set(token, (h = this.inner.hash(token)));
    return h;
  }
}

/**
 * Appends `rows` synthetic but well-formed `job.indexed` commits (one per job aggregate, expected sequence 0,
 * through EventStore.append) for `owners` other owners, so that the memory index projection builds them.
 */
export async function appendSynthetic(env: BenchEnv, rows: number, opts: { owners?: number; ownerList?: string[]; inFlight?: number; label?: string } = {}): Promise<{ seconds: number; lastSeq: number }> {
  const dims = env.services.embedderDims;
  const store = new EventStore(env.log.js, env.log.jsm);
  const memories = syntheticMemories(Math.min(rows, 20_000), dims);
  const owners = opts.ownerList ?? Array.from({ length: opts.owners ?? 200 }, () => hex(32));
  const ownerCount = owners.length;
  // The keyed lexical terms the actor host would attach (same secret as the stack's actors and gateway).
  const secret = env.workerEnv.MEMRELAY_LEXICAL_KEY;
  const keyring = secret ? new LexicalKeyring(parseLexicalSecret(secret)) : undefined;
  const keys = new Map<string, MemoKey>();
  const keyOf = (owner: string) => {
    let k = keys.get(owner);
    if (!k) keys.set(owner, (k = new MemoKey(keyring!.forOwner(owner))));
    return k;
  };
  const namespaces = ["default", "work", "personal", "ns10k"];
  const now = Date.now();
  let next = 0;
  let lastSeq = 0;
  let lastLog = performance.now();
  const t0 = performance.now();
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= rows) return;
      const jobId = randomUUID();
      const owner = owners[i % ownerCount];
      const memory = memories[i % memories.length];
      const submitted = new Date(now - ((rows - i) % (90 * 86_400)) * 1000).toISOString();
      const data: JobIndexed = {
        object_id: hex(32),
        wallet: owners[(i * 7) % ownerCount],
        owner,
        namespace: namespaces[(i >> 3) % 10 < 6 ? 0 : (i >> 3) % 10 < 8 ? 1 : (i >> 3) % 10 < 9 ? 2 : 3],
        blob_id: blobId(),
        vector_f32: memory.vector_f32,
        importance: Math.round(((i * 37) % 100) / 10) / 10,
        size: 200 + ((i * 13) % 800),
        created_at: submitted,
        ...(keyring ? { lexical: documentTerms(keyOf(owner), memory.text), submitted_at: submitted, position: 0 } : {}),
      };
      // A slow (shared) machine can time out an acknowledgement: retry with the same commit id (deduplicated by
      // JetStream); a conflict then means the first attempt landed.
      for (let attempt = 1; ; attempt++) {
        try {
          const r = await store.append(`job.${jobId}`, [{ type: JOB_EVENTS.indexed, version: JOB_VECTOR_EVENT_VERSION, data }], 0, { causationId: jobId, correlationId: jobId, commitId: `${jobId}:0` });
          if (r.seq > lastSeq) lastSeq = r.seq;
          break;
        } catch (err) {
          if (err instanceof ConcurrencyConflict) break;
          if (attempt >= 8) throw err;
          await sleep(250 * attempt);
        }
      }
      if (performance.now() - lastLog > 3_000) {
        lastLog = performance.now();
        log(`  ${opts.label ?? "synthetic"}: ${i + 1}/${rows} commits appended (${Math.round((i + 1) / ((lastLog - t0) / 1000))}/s)`);
      }
    }
  };
  await Promise.all(Array.from({ length: opts.inFlight ?? 128 }, worker));
  return { seconds: (performance.now() - t0) / 1000, lastSeq };
}

export { Agent };
