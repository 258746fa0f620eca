// A three-node JetStream cluster on loopback (temp dirs, free ports), for replication tests.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, waitForPort } from "./nats-server.ts";

export interface NatsCluster {
  readonly urls: string[];
  kill(index: number): Promise<void>;
  cleanup(): Promise<void>;
}

export async function startNatsCluster(size = 3): Promise<NatsCluster> {
  const dir = mkdtempSync(join(tmpdir(), "memrelay-cluster-"));
  const clientPorts = await Promise.all(Array.from({ length: size }, freePort));
  const routePorts = await Promise.all(Array.from({ length: size }, freePort));
  const children: ChildProcess[] = [];
  for (let i = 0; i < size; i++) {
    const conf = join(dir, `n${i}.conf`);
    const routes = routePorts.map((p) => `nats-route://127.0.0.1:${p}`).join(", ");
    writeFileSync(
      conf,
      `server_name: n${i}\nlisten: 127.0.0.1:${clientPorts[i]}\njetstream { store_dir: "${join(dir, `js${i}`)}" }\n` +
        `cluster { name: memrelay-test, listen: 127.0.0.1:${routePorts[i]}, routes: [ ${routes} ] }\n`,
    );
    const child = spawn(process.env.NATS_SERVER_BIN ?? "nats-server", ["-c", conf], { stdio: ["ignore", "ignore", "ignore"] });
    children.push(child);
  }
  await Promise.all(clientPorts.map((p) => waitForPort(p)));
  const stop = (c: ChildProcess, signal: NodeJS.Signals) =>
    new Promise<void>((res) => {
      if (c.exitCode !== null || c.signalCode !== null) return res();
      c.once("exit", () => res());
      c.kill(signal);
    });
  return {
    urls: clientPorts.map((p) => `nats://127.0.0.1:${p}`),
    kill: (i) => stop(children[i], "SIGKILL"),
    cleanup: async () => {
      await Promise.all(children.map((c) => stop(c, "SIGTERM")));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
