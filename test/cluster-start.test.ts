// Black-box (issue 32 §1): `memrelay start --cluster` as a user runs it. Three JetStream nodes with every stream and
// KV bucket at R3, two gateways that both take writes and answer recalls of what the other accepted, operator
// commands (lag, replay) that find the cluster through the stack file (and leave its streams at R3), and SIGTERM
// stopping every process it started (the nodes, the second relayer process) within 10 s.
import { afterAll, describe, expect, it } from "vitest";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { databaseNameFor } from "../cli/services.ts";
import { adminUrl } from "./support/postgres.ts";
import { cleanEnv, memrelay, startStack } from "./support/start-process.ts";

const home = mkdtempSync(join(tmpdir(), "memrelay-home-"));
const dataDir = mkdtempSync(join(tmpdir(), "memrelay-cluster-"));
const env = cleanEnv(home, dataDir, { SECOND_GATEWAY_PORT: "0", LOG_FORMAT: "json" });

afterAll(async () => {
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${databaseNameFor(join(dataDir, "cluster"))} WITH (FORCE)`).catch(() => undefined);
  await admin.end();
  for (const d of [dataDir, home]) rmSync(d, { recursive: true, force: true });
});

/** Processes whose environment names a store under this cluster's data directory (its nats-server nodes). */
function natsNodesOf(dir: string): number[] {
  const store = `MEMRELAY_NATS_STORE=${join(dir, "cluster", "nats")}/`;
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/environ`, "utf8").includes(store);
      } catch {
        return false;
      }
    })
    .map(Number);
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function replicasOf(natsUrl: string): Promise<Record<string, number>> {
  const nc = await connect({ servers: natsUrl.split(",") });
  try {
    const jsm = await jetstreamManager(nc);
    const out: Record<string, number> = {};
    for await (const s of jsm.streams.list()) out[s.config.name] = s.config.num_replicas;
    return out;
  } finally {
    await nc.close();
  }
}

describe("bad input", () => {
  it.each(["0", "6", "three", "3.5", "-1"])("NATS_REPLICAS=%s stops a serving command before it connects, naming the variable", (value) => {
    const r = memrelay({ ...env, NATS_REPLICAS: value }, "worker", "--roles", "actors");
    expect(r.status, r.out).toBe(2);
    expect(r.out).toContain(`NATS_REPLICAS must be the copies of each stream (3 on a three-node cluster): an integer from 1 to 5; got ${JSON.stringify(value)}`);
  });

  it.each([
    ["--network testnet", ["--network", "testnet"], {}],
    ["CHAIN_NETWORK=testnet", [], { CHAIN_NETWORK: "testnet" }],
  ])("--cluster with %s is refused before anything starts: the cluster runs the local network", (_case, args, extra) => {
    const r = memrelay({ ...env, ...extra }, "start", "--cluster", ...args);
    expect(r.status, r.out).toBe(2);
    expect(r.out).toMatch(/--cluster runs on the local network/);
    expect(existsSync(join(dataDir, "cluster"))).toBe(false);
  });
});

describe("memrelay start --cluster", () => {
  it("serves through both gateways on an R3 cluster, answers operator commands, and stops everything on SIGTERM within 10 s", async () => {
    const s = startStack(env, ["--cluster"]);
    try {
      await s.running;
      const out = s.output();
      const gateways = [1, 2].map((n) => new RegExp(`^\\s+gateway ${n}\\s+(http://127\\.0\\.0\\.1:\\d+)`, "m").exec(out)?.[1]);
      expect(gateways[0], out).toBeDefined();
      expect(gateways[1], out).toBeDefined();
      expect(gateways[0]).not.toBe(gateways[1]);
      expect(out.match(/^\s+NATS n\d\s+nats:\/\/127\.0\.0\.1:\d+\s+\(route nats-route:\/\/127\.0\.0\.1:\d+/gm)).toHaveLength(3);
      // Every HTTP address it prints answers (gateways, sidecar, blob store, console, dashboard, chain RPC, key
      // servers, Walrus nodes).
      const listing = out.slice(out.indexOf("memrelay is running"), out.indexOf("Operator commands"));
      const addresses = [...new Set(listing.match(/http:\/\/127\.0\.0\.1:\d+/g))];
      expect(addresses.length, listing).toBeGreaterThanOrEqual(12);
      for (const address of addresses) expect((await fetch(address, { signal: AbortSignal.timeout(5_000) })).status, address).toBeGreaterThan(0);
      const workerPid = Number(/memrelay worker pid (\d+)/.exec(out)?.[1]);
      expect(alive(workerPid)).toBe(true);
      expect(natsNodesOf(dataDir)).toHaveLength(3);
      const stack = JSON.parse(readFileSync(join(dataDir, "stack.json"), "utf8"));
      expect(stack.relayer_urls).toEqual(gateways);
      expect(stack.nats_url.split(",")).toHaveLength(3);

      // Each gateway accepts a memory, and each recalls both by their own text (the other's included).
      const texts = ["The beehives stand on the north roof", "The spare key hangs behind the blue door"];
      for (const [i, text] of texts.entries()) {
        const r = memrelay(env, "remember", text, "--wait", "--relayer", gateways[i]!);
        expect(r.status, r.out).toBe(0);
        expect(JSON.parse(r.stdout).status).toBe("done");
      }
      for (const gateway of gateways) {
        for (const text of texts) {
          const r = memrelay(env, "recall", text, "--relayer", gateway!, "--limit", "1");
          expect(r.status, r.out).toBe(0);
          expect(r.stdout).toContain(text);
        }
      }

      // An operator command finds the cluster through the stack file, sees the read models caught up, and (opening
      // the event log without a replicas setting) leaves every stream and KV bucket at R3.
      const lag = memrelay(env, "lag");
      expect(lag.status, lag.out).toBe(0);
      expect(lag.stdout).toMatch(/^memory_index\s+checkpoint\s+\d+\s+lag 0 events$/m);
      // A replay of the memory index from the R3 log (both relayer processes notice the rewind): both memories are
      // recalled again, through the second gateway.
      const replay = memrelay(env, "replay", "memory_index");
      expect(replay.status, replay.out).toBe(0);
      for (const text of texts) {
        const r = memrelay(env, "recall", text, "--relayer", gateways[1]!, "--limit", "1");
        expect(r.stdout, r.out).toContain(text);
      }
      const replicas = await replicasOf(stack.nats_url);
      for (const name of ["CMD", "EVT", "ALERTS", "CHAIN", "DLQ", "KV_snapshots", "KV_nonces", "KV_chain_state"]) expect(replicas[name], name).toBe(3);
      expect(Object.values(replicas).every((n) => n === 3), JSON.stringify(replicas)).toBe(true);

      const t0 = Date.now();
      s.child.kill("SIGTERM");
      expect(await s.exited).toBe(0);
      expect(Date.now() - t0).toBeLessThan(10_000);
      expect(alive(workerPid)).toBe(false);
      expect(natsNodesOf(dataDir)).toEqual([]);
      expect(existsSync(join(dataDir, "stack.json"))).toBe(false);
    } finally {
      s.child.kill("SIGKILL");
    }
  }, 240_000);
});
