// The JetStream cluster of `memrelay start --cluster`: three nats-server processes on loopback, each with nats.conf
// (encrypted store, the data directory's at-rest key), its own store directory and free client and route ports,
// routed to the other two. Ready when JetStream has a meta leader, so the streams can be created at R3.
import type { ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { freePort } from "../runtime/tcp-ports.ts";
import { natsServerBinary, natsServerOn, stopNatsChild } from "./services.ts";

export interface NatsClusterService {
  /** Every node's client URL, comma-separated (what NATS_URL takes: clients fail over between them). */
  readonly url: string;
  readonly nodes: readonly { readonly name: string; readonly url: string; readonly route: string; readonly store: string }[];
  stop(): Promise<void>;
}

/** How long the nodes get to elect a JetStream meta leader (seconds on a loaded machine). */
const META_LEADER_MS = 30_000;

export async function startNatsCluster(dataDir: string, size = 3): Promise<NatsClusterService> {
  const binary = natsServerBinary();
  const clientPorts = await Promise.all(Array.from({ length: size }, freePort));
  const routePorts = await Promise.all(Array.from({ length: size }, freePort));
  const routes = routePorts.map((p) => `nats-route://127.0.0.1:${p}`);
  const nodes = clientPorts.map((port, i) => ({
    name: `n${i + 1}`,
    url: `nats://127.0.0.1:${port}`,
    route: routes[i],
    store: join(dataDir, "nats", `n${i + 1}`),
  }));
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(children.map(stopNatsChild));
  };
  try {
    const started = await Promise.all(
      nodes.map((node, i) => {
        mkdirSync(node.store, { recursive: true });
        const flags = ["--server_name", node.name, "--cluster_name", "memrelay", "--cluster", `nats://127.0.0.1:${routePorts[i]}`, "--routes", routes.filter((_, j) => j !== i).join(",")];
        return natsServerOn(binary, clientPorts[i], node.store, dataDir, flags);
      }),
    );
    for (const s of started) if ("child" in s) children.push(s.child);
    const failed = started.find((s) => !("child" in s));
    if (failed && "stderr" in failed) throw new Error(`nats-server did not start:\n${failed.stderr}`);
    const url = nodes.map((n) => n.url).join(",");
    await untilJetStreamAnswers(url);
    return { url, nodes, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Waits until the cluster's JetStream answers an account request (it has elected a meta leader). */
async function untilJetStreamAnswers(servers: string): Promise<void> {
  const nc = await connect({ servers: servers.split(","), name: "memrelay-cluster-probe" });
  const deadline = Date.now() + META_LEADER_MS;
  try {
    for (;;) {
      try {
        await (await jetstreamManager(nc)).getAccountInfo();
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`the NATS cluster elected no JetStream leader within ${META_LEADER_MS / 1000} s: ${(err as Error).message}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  } finally {
    await nc.close();
  }
}
