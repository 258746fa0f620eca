// One benchmark environment: a private nats-server, a fresh database on the native Postgres, the services process
// and relayer workers in their own processes. The bench process itself is only the load generator and observer.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { openEventLog, type EventLog } from "../../eventlog/connection.ts";
import { createPool, type Db } from "../../db/pool.ts";
import { createTestDatabase, type TestDatabase } from "../../test/support/postgres.ts";
import { MemrelayClient } from "../../client/memrelay-client.ts";
import { createDelegateSession } from "../../adapters/encryption/session.ts";
import { MemorySampler, pidsByCmdline, repoRoot, startNats, startServices, startWorker, type IdentityWire, type NatsProc, type ServicesProc, type WorkerProc } from "./processes.ts";

export type Role = "gateway" | "actors" | "projections" | "mcp";

export interface EnvOptions {
  readonly embedder: "hashing" | "use-lite";
  readonly encryptedNats: boolean;
  /** Extra node flags for worker processes (e.g. --cpu-prof). */
  readonly workerNodeArgs?: string[];
  readonly label: string;
  /** Variables for the services process and every worker (e.g. MEMRELAY_NETWORK_PROFILE). */
  readonly extraEnv?: Record<string, string>;
}

export class BenchEnv {
  readonly workers = new Map<Role, WorkerProc>();
  private constructor(
    readonly opts: EnvOptions,
    readonly dir: string,
    readonly nats: NatsProc,
    readonly database: TestDatabase,
    readonly services: ServicesProc,
    readonly db: Db,
    readonly log: EventLog,
    readonly sampler: MemorySampler,
  ) {}

  static async start(opts: EnvOptions, sampler: MemorySampler): Promise<BenchEnv> {
    const dir = mkdtempSync(join(tmpdir(), `memrelay-bench-${opts.label}-`));
    mkdirSync(join(dir, "logs"), { recursive: true });
    const nats = await startNats(dir, { encrypted: opts.encryptedNats });
    // A start that fails half-way leaves no nats-server or database behind.
    let database: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
    let services: Awaited<ReturnType<typeof startServices>> | undefined;
    try {
      database = await createTestDatabase("memrelay_bench");
      services = await startServices({ NATS_URL: nats.url, DATABASE_URL: database.url, MEMRELAY_EMBEDDER: opts.embedder, ...opts.extraEnv }, join(dir, "logs"), opts.workerNodeArgs ?? []);
    } catch (err) {
      await services?.stop().catch(() => undefined);
      await database?.drop().catch(() => undefined);
      await nats.stop().catch(() => undefined);
      throw err;
    }
    const db = createPool(database.url, 20);
    const log = await openEventLog({ servers: nats.url, name: "memrelay-bench" });
    const env = new BenchEnv(opts, dir, nats, database, services, db, log, sampler);
    const p = opts.label === "main" ? "" : `${opts.label}: `;
    sampler.track(`${p}nats-server`, nats.pid);
    sampler.track(`${p}services (chain, key servers, blob store)`, services.pid);
    // Backends of this database only (other databases on the shared server are someone else's).
    sampler.track(`${p}postgres backends (bench database)`, () => pidsByCmdline(` ${database.name} `));
    return env;
  }

  get workerEnv(): Record<string, string> {
    return { ...this.services.workerEnv, ...this.opts.extraEnv };
  }

  get relayerUrl(): string {
    const gw = this.workers.get("gateway");
    if (!gw) throw new Error("no gateway worker");
    return `http://127.0.0.1:${gw.port}`;
  }

  private memLabel(role: Role) {
    return `${this.opts.label === "main" ? "" : `${this.opts.label}: `}worker --roles ${role}`;
  }

  async startRole(role: Role, extraEnv: Record<string, string> = {}): Promise<WorkerProc> {
    const existing = this.workers.get(role);
    if (existing) return existing;
    const w = await startWorker(role, { ...this.workerEnv, ...extraEnv }, join(this.dir, "logs"), this.opts.workerNodeArgs ?? []);
    this.workers.set(role, w);
    this.sampler.track(this.memLabel(role), w.pid);
    return w;
  }

  /**
   * The actor host with the blob store and the chain record stood in by no-I/O ports (bench/pipeline-floor-worker.ts),
   * in the "actors" slot: stopRole("actors") stops it.
   */
  async startPipelineFloorActors(): Promise<WorkerProc> {
    if (this.workers.has("actors")) throw new Error("the actor host is running: stop it before starting the pipeline floor's");
    const entry = [join(repoRoot, "bench", "pipeline-floor-worker.ts")];
    const w = await startWorker("actors", this.workerEnv, join(this.dir, "logs"), ["--import", "tsx", ...(this.opts.workerNodeArgs ?? [])], entry);
    this.workers.set("actors", w);
    this.sampler.track(`${this.memLabel("actors")} (pipeline floor)`, w.pid);
    return w;
  }

  async stopRole(role: Role): Promise<void> {
    const w = this.workers.get(role);
    if (!w) return;
    this.sampler.sampleNowSync();
    await w.stop();
    this.workers.delete(role);
  }

  /** SIGSTOP / SIGCONT a worker (e.g. to pause the actor host during the gateway benchmark). */
  pause(role: Role, paused: boolean): void {
    const w = this.workers.get(role);
    if (w) process.kill(w.pid, paused ? "SIGSTOP" : "SIGCONT");
  }

  /** nats-server's message counters (from /varz): messages in (published by clients) and out (delivered). */
  async natsCounters(): Promise<{ in: number; out: number; inBytes: number; outBytes: number }> {
    const res = await request(`${this.nats.monitorUrl}/varz`);
    const v = (await res.body.json()) as { in_msgs: number; out_msgs: number; in_bytes: number; out_bytes: number };
    return { in: v.in_msgs, out: v.out_msgs, inBytes: v.in_bytes, outBytes: v.out_bytes };
  }

  /** Appends so far per JetStream stream (last sequence), to attribute writes per operation. */
  async streamSeqs(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for await (const si of this.log.jsm.streams.list()) out.set(si.config.name, si.state.last_seq);
    return out;
  }

  async identity(label?: string): Promise<IdentityWire> {
    return this.services.createIdentity(label);
  }

  async client(who: IdentityWire, agent?: Agent, withSession = false): Promise<MemrelayClient> {
    const secret = Buffer.from(who.delegateSecretKeyHex, "hex");
    let encryptionSession: string | undefined;
    if (withSession) {
      const s = await createDelegateSession({ delegateSecretKey: secret, packageId: this.workerEnv.MEMORY_PACKAGE_ID, rpcUrl: this.workerEnv.CHAIN_RPC_URL, ttlMin: 30 });
      encryptionSession = s.header;
    }
    return new MemrelayClient({ baseUrl: this.relayerUrl, delegatePrivateKey: secret, accountId: who.accountId, encryptionSession, agent });
  }

  async teardown(): Promise<void> {
    this.sampler.sampleNowSync();
    for (const role of [...this.workers.keys()]) await this.stopRole(role).catch(() => undefined);
    await this.services.stop().catch(() => undefined);
    await this.log.close().catch(() => undefined);
    await this.db.end().catch(() => undefined);
    await this.database.drop().catch(() => undefined);
    await this.nats.stop().catch(() => undefined);
    if (!process.env.MEMRELAY_BENCH_KEEP) rmSync(this.dir, { recursive: true, force: true });
  }
}
