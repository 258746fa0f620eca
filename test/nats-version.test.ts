// A replicated event log needs nats-server 2.10 or later (eventlog/nats-version.ts: 2.9.10's stream replicas diverge
// under node faults). Unit: which versions are refused. Black-box: `memrelay start --cluster` refuses a 2.9 binary
// before starting any node, and the event log refuses R3 on a server that announces 2.9 (a stand-in that speaks only
// the first line of the NATS protocol: the version is all the check reads).
import { afterAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:net";
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseServerVersion, replicationRefusal } from "../eventlog/nats-version.ts";
import { openEventLog } from "../eventlog/connection.ts";
import { cleanEnv, memrelay } from "./support/start-process.ts";

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), "memrelay-nats-version-"));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("which nats-server may hold a replicated event log", () => {
  it("reads versions as nats-server and its INFO line write them", () => {
    expect(parseServerVersion("nats-server: v2.10.27\n")).toEqual([2, 10, 27]);
    expect(parseServerVersion("2.9.10")).toEqual([2, 9, 10]);
    expect(parseServerVersion("unknown")).toBeUndefined();
  });

  it("refuses 2.9 and anything it cannot read, takes 2.10 and later", () => {
    for (const v of ["2.9.10", "v2.9.25", "1.4.1", "", "garbage"]) expect(replicationRefusal(v), v).toMatch(/cannot hold a replicated event log.*2\.10 or later/);
    for (const v of ["2.10.0", "2.10.27", "v2.11.1", "3.0.0"]) expect(replicationRefusal(v), v).toBeUndefined();
  });
});

describe("a 2.9 nats-server with replicas", () => {
  it("memrelay start --cluster refuses it before starting a node", () => {
    const dir = tempDir();
    const fake = join(dir, "nats-server");
    writeFileSync(fake, `#!/bin/sh\n[ "$1" = "--version" ] && echo "nats-server: v2.9.10" && exit 0\ntouch ${join(dir, "started")}\nsleep 30\n`);
    chmodSync(fake, 0o755);
    const r = memrelay(cleanEnv(join(dir, "home"), join(dir, "data"), { NATS_SERVER_BIN: fake }), "start", "--cluster");
    expect(r.status, r.out).not.toBe(0);
    expect(r.out).toMatch(/nats-server 2\.9\.10 cannot hold a replicated event log/);
    expect(r.out).toMatch(/scripts\/setup-system\.sh nats/);
    expect(existsSync(join(dir, "started")), "a node was started").toBe(false);
  }, 60_000);

  it("the event log refuses R3 on a server that announces 2.9, and says why", async () => {
    let server: Server | undefined;
    const port = await new Promise<number>((resolve) => {
      server = createServer((socket) => {
        socket.write(`INFO ${JSON.stringify({ server_id: "stand-in", version: "2.9.10", proto: 1, headers: true, max_payload: 1048576, jetstream: true })}\r\n`);
        socket.on("data", (d) => {
          if (d.toString().includes("PING")) socket.write("PONG\r\n");
        });
        socket.on("error", () => undefined);
      }).listen(0, "127.0.0.1", () => resolve((server!.address() as { port: number }).port));
    });
    try {
      await expect(openEventLog({ servers: `nats://127.0.0.1:${port}`, name: "version-check", replicas: 3 })).rejects.toThrow(/nats-server 2\.9\.10 cannot hold a replicated event log/);
    } finally {
      server!.close();
    }
  });
});
