// A benchmark environment of the cluster shape (DESIGN.md 2.4): the three-node JetStream cluster that
// `memrelay start --cluster` runs (cli/nats-cluster.ts: nats.conf, encrypted stores, every stream and KV bucket at
// R3), a fresh database on the native Postgres, the services process, and any number of relayer workers per role,
// each in its own process, so that CPU can be attributed to a role and to each of its instances. Unlike
// `memrelay start --cluster`, whose relayer processes each carry a gateway, an actor host and the projections, here
// a configuration is whatever workers the caller starts (1 or 2 gateways, 1 or 2 actor hosts, ...).
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPool, type Db } from "../../db/pool.ts";
import { createTestDatabase, type TestDatabase } from "../../test/support/postgres.ts";
import { startNatsCluster, type NatsClusterService } from "../../cli/nats-cluster.ts";
import { MemorySampler, pidsByCmdline, startServices, startWorker, type IdentityWire, type ServicesProc, type WorkerProc } from "./processes.ts";

/** What a tracked process is, for CPU per role. */
export type ClusterRole = "gateway" | "actor host" | "projections" | "nats-server" | "services" | "postgres backends";

/** The `memrelay worker --roles` value of each relayer role. */
const WORKER_ROLES = { gateway: "gateway", "actor host": "actors", projections: "projections" } as const;
export type RelayerRole = keyof typeof WORKER_ROLES;

export class ClusterEnv {
  /** Tracked label → role, for every process of this environment the sampler reads. */
  readonly roleOf = new Map<string, ClusterRole>();
  /** Running relayer workers by their label ("gateway 1", "actor host 2", ...). */
  readonly workers = new Map<string, WorkerProc & { readonly role: RelayerRole }>();

  private constructor(
    readonly label: string,
    readonly dir: string,
    readonly nats: NatsClusterService,
    readonly database: TestDatabase,
    readonly services: ServicesProc,
    readonly db: Db,
    private readonly sampler: MemorySampler,
    private readonly extraEnv: Record<string, string>,
  ) {}

  static async start(label: string, sampler: MemorySampler, extraEnv: Record<string, string> = {}): Promise<ClusterEnv> {
    const dir = mkdtempSync(join(tmpdir(), `memrelay-bench-${label}-`));
    mkdirSync(join(dir, "logs"), { recursive: true });
    const nats = await startNatsCluster(dir);
    // A start that fails half-way leaves no nats-server or database behind.
    let database: TestDatabase | undefined;
    let services: ServicesProc | undefined;
    let natsPids: number[][];
    try {
      natsPids = nats.nodes.map((node) => natsNodePids(node.route));
      database = await createTestDatabase("memrelay_bench");
      // The services process runs the MCP sidecar: on a free port (its default, 9000, may be another stack's here).
      services = await startServices({ NATS_URL: nats.url, NATS_REPLICAS: "3", DATABASE_URL: database.url, SIDECAR_URL: "http://127.0.0.1:0", ...extraEnv }, join(dir, "logs"));
    } catch (err) {
      await services?.stop().catch(() => undefined);
      await database?.drop().catch(() => undefined);
      await nats.stop().catch(() => undefined);
      throw err;
    }
    const env = new ClusterEnv(label, dir, nats, database, services, createPool(database.url, 8), sampler, extraEnv);
    nats.nodes.forEach((node, i) => env.track(`nats-server ${node.name}`, "nats-server", () => natsPids[i]));
    env.track("services (chain, key servers, blob store)", "services", () => [services.pid]);
    // Backends of this database only (other databases on the shared server are someone else's).
    env.track("postgres backends (bench database)", "postgres backends", () => pidsByCmdline(` ${database.name} `));
    return env;
  }

  private track(name: string, role: ClusterRole, pids: () => number[]): void {
    const label = `${this.label}: ${name}`;
    this.roleOf.set(label, role);
    this.sampler.track(label, pids);
  }

  /** Starts `memrelay worker --roles <role>` as `name` (e.g. "gateway 2") with every stream and bucket at R3. */
  async startWorker(role: RelayerRole, name: string): Promise<WorkerProc> {
    if (this.workers.has(name)) throw new Error(`${name} is running already`);
    // Without SIDECAR_AUTH_TOKEN a gateway forwards no agent transport and so watches no sidecar: the sidecar's free
    // port is not in the services' worker env, and a gateway whose watchdog cannot reach it exits after 3 minutes.
    const { SIDECAR_AUTH_TOKEN: _, ...env } = this.services.workerEnv;
    const w = await startWorker(WORKER_ROLES[role], { ...env, NATS_REPLICAS: "3", ...this.extraEnv }, join(this.dir, "logs"));
    this.workers.set(name, { ...w, role });
    this.track(name, role, () => [w.pid]);
    return w;
  }

  async stopWorker(name: string): Promise<void> {
    const w = this.workers.get(name);
    if (!w) return;
    this.sampler.sampleNowSync();
    await w.stop();
    this.workers.delete(name);
  }

  /** The running gateways' base URLs, in the order they were started. */
  gatewayUrls(): string[] {
    return [...this.workers.values()].filter((w) => w.role === "gateway").map((w) => `http://127.0.0.1:${w.port}`);
  }

  identity(label?: string): Promise<IdentityWire> {
    return this.services.createIdentity(label);
  }

  async teardown(): Promise<void> {
    this.sampler.sampleNowSync();
    for (const name of [...this.workers.keys()]) await this.stopWorker(name).catch(() => undefined);
    await this.services.stop().catch(() => undefined);
    await this.db.end().catch(() => undefined);
    await this.database.drop().catch(() => undefined);
    await this.nats.stop().catch(() => undefined);
    if (!process.env.MEMRELAY_BENCH_KEEP) rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A cluster node's pid: the node's own `--cluster nats://127.0.0.1:<route port>` argument is unique to it (the other
 * nodes name that port only as `nats-route://…` in their `--routes`).
 */
function natsNodePids(route: string): number[] {
  const pids = pidsByCmdline(`\0nats://127.0.0.1:${new URL(route).port}\0`);
  if (pids.length !== 1) throw new Error(`expected one nats-server for route ${route}, found ${pids.length}`);
  return pids;
}
