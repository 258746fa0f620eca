// The JetStream cluster of `memrelay start --cluster`: three nats-server processes on loopback, each with nats.conf
// (encrypted store, the data directory's at-rest key), its own store directory and free client and route ports,
// routed to the other two. Ready when JetStream can place a stream on every node, so the streams can be created at R3.
import { spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager, StorageType } from "@nats-io/jetstream";
import { freePort } from "../runtime/tcp-ports.ts";
import { replicationRefusal } from "../eventlog/nats-version.ts";
import { natsServerBinary, natsServerOn, stopNatsChild } from "./services.ts";

export interface NatsClusterService {
  /** Every node's client URL, comma-separated (what NATS_URL takes: clients fail over between them). */
  readonly url: string;
  readonly nodes: readonly { readonly name: string; readonly url: string; readonly route: string; readonly store: string }[];
  stop(): Promise<void>;
}

/** How long the nodes get to elect a JetStream meta leader and place a stream on every node (seconds on a loaded machine). */
const META_LEADER_MS = 30_000;

/**
 * Starts of the nodes before the cluster's start gives up. nats-server 2.10.27 answered the placement probe "no
 * suitable peers for placement", with no reason named, for over 30 s in 3 of 47 cluster starts on this loaded machine
 * (bench/NOTES.md, "Issue 32, stop 40"); the nodes are then stopped and started again on the same stores and ports.
 */
const NODE_STARTS = 2;

export async function startNatsCluster(dataDir: string, size = 3): Promise<NatsClusterService> {
  const binary = natsServerBinary();
  // Refused before any node starts (the event log's connection would refuse it too, after the cluster formed).
  const refusal = replicationRefusal(spawnSync(binary, ["--version"], { encoding: "utf8" }).stdout ?? "");
  if (refusal) throw new Error(refusal);
  const clientPorts = await Promise.all(Array.from({ length: size }, freePort));
  const routePorts = await Promise.all(Array.from({ length: size }, freePort));
  const routes = routePorts.map((p) => `nats-route://127.0.0.1:${p}`);
  const nodes = clientPorts.map((port, i) => ({
    name: `n${i + 1}`,
    url: `nats://127.0.0.1:${port}`,
    route: routes[i],
    store: join(dataDir, "nats", `n${i + 1}`),
  }));
  const url = nodes.map((n) => n.url).join(",");
  let children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(children.map(stopNatsChild));
  };
  for (let start = 1; ; start++) {
    try {
      const started = await Promise.all(
        nodes.map((node, i) => {
          mkdirSync(node.store, { recursive: true });
          const flags = ["--server_name", node.name, "--cluster_name", "memrelay", "--cluster", `nats://127.0.0.1:${routePorts[i]}`, "--routes", routes.filter((_, j) => j !== i).join(",")];
          return natsServerOn(binary, clientPorts[i], node.store, dataDir, flags);
        }),
      );
      children = started.flatMap((s) => ("child" in s ? [s.child] : []));
      const failed = started.find((s) => !("child" in s));
      if (failed && "stderr" in failed) throw new Error(`nats-server did not start:\n${failed.stderr}`);
      await untilJetStreamAnswers(url, size);
      return { url, nodes, stop };
    } catch (err) {
      await stop();
      if (!(err instanceof PlacementTimedOut) || start >= NODE_STARTS) throw err;
    }
  }
}

/** The cluster formed but could not place a stream on every node within META_LEADER_MS. */
class PlacementTimedOut extends Error {}

/**
 * Waits until the cluster can place a stream on all its nodes: a meta leader alone is not enough (seen on a loaded
 * machine: the streams' creation then failed with "no suitable peers for placement" while a node had not joined the
 * meta group yet), so a throw-away in-memory stream at `replicas` is created and deleted.
 */
async function untilJetStreamAnswers(servers: string, replicas: number): Promise<void> {
  const nc = await connect({ servers: servers.split(","), name: "memrelay-cluster-probe" });
  const deadline = Date.now() + META_LEADER_MS;
  const probe = `memrelay_placement_probe_${process.pid}`;
  try {
    for (;;) {
      try {
        const jsm = await jetstreamManager(nc);
        await jsm.streams.add({ name: probe, subjects: [`${probe}.>`], num_replicas: replicas, storage: StorageType.Memory });
        await jsm.streams.delete(probe);
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new PlacementTimedOut(`the NATS cluster could not place a stream on ${replicas} nodes within ${META_LEADER_MS / 1000} s: ${(err as Error).message}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  } finally {
    await nc.close();
  }
}
