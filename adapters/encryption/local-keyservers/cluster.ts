// Starts n local Seal-compatible key servers on loopback, each with its own master key persisted in `dir`
// (one file per server, mode 0600, directory 0700), and describes them for the chain (key-server objects) and for
// SealClient (server configs). A restart with the same directory keeps each server's object id and master key,
// so everything encrypted before stays decryptable.

import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { normalizeSuiAddress } from "@mysten/sui/utils";
import type { ChainObject } from "../../chain/local/rpc/objects.ts";
import { generateMasterKey } from "./ibe.ts";
import { keyServerObjects } from "./onchain.ts";
import { startKeyServer, type IsAuthorized, type KeyServerHandle } from "./server.ts";

export interface KeyServerClusterOptions {
  /** Where master keys live (created 0700 if missing). */
  readonly dir: string;
  /** Number of servers (default 3). */
  readonly count?: number;
  readonly packageIds: readonly string[];
  readonly isAuthorized: IsAuthorized;
  readonly host?: string;
  /** Fixed ports per server; default ephemeral ports (publish the objects again after each start). */
  readonly ports?: readonly number[];
  readonly sealPackageId?: string;
}

export interface KeyServerCluster {
  readonly servers: readonly KeyServerHandle[];
  /** For SealClient / ENCRYPTION_SERVER_CONFIGS: one entry per server, weight 1. */
  readonly serverConfigs: readonly { objectId: string; weight: number }[];
  /** Key-server objects (parents and versioned dynamic fields) to put into the chain's object registry. */
  chainObjects(): ChainObject[];
  /** Publishes chainObjects() into a registry. */
  publish(registry: { putObject(o: ChainObject): unknown }): Promise<void>;
  /** Stops one server (fault tests); the others keep serving. */
  stop(index: number): Promise<void>;
  close(): Promise<void>;
}

interface KeyFile {
  version: 1;
  objectId: string;
  masterKey: string;
  createdAt: string;
}

function loadOrCreateKey(dir: string, index: number): { objectId: string; masterKey: Uint8Array } {
  const file = join(dir, `keyserver-${index}.json`);
  if (existsSync(file)) {
    const k = JSON.parse(readFileSync(file, "utf8")) as KeyFile;
    if (k.version !== 1 || typeof k.objectId !== "string" || !/^[0-9a-f]{64}$/.test(k.masterKey)) {
      throw new Error(`key server file ${file} is malformed`);
    }
    return { objectId: normalizeSuiAddress(k.objectId), masterKey: new Uint8Array(Buffer.from(k.masterKey, "hex")) };
  }
  const masterKey = generateMasterKey();
  const objectId = normalizeSuiAddress(randomBytes(32).toString("hex"));
  const body: KeyFile = { version: 1, objectId, masterKey: Buffer.from(masterKey).toString("hex"), createdAt: new Date().toISOString() };
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(body, null, 2) + "\n", { mode: 0o600 });
  renameSync(tmp, file);
  return { objectId, masterKey };
}

export async function startKeyServerCluster(opts: KeyServerClusterOptions): Promise<KeyServerCluster> {
  const count = opts.count ?? 3;
  if (!Number.isInteger(count) || count < 1 || count > 32) throw new Error("key server count must be 1..32");
  mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
  try {
    chmodSync(opts.dir, 0o700);
  } catch {
    // not ours to change (e.g. a shared mount): the key files themselves stay 0600
  }
  const servers: KeyServerHandle[] = [];
  const live = new Set<number>();
  try {
    for (let i = 0; i < count; i++) {
      const { objectId, masterKey } = loadOrCreateKey(opts.dir, i);
      servers.push(
        await startKeyServer({ objectId, masterKey, packageIds: opts.packageIds, isAuthorized: opts.isAuthorized, host: opts.host, port: opts.ports?.[i] }),
      );
      live.add(i);
    }
  } catch (e) {
    await Promise.all(servers.map((s) => s.close()));
    throw e;
  }
  // Object versions grow across restarts (the URL of an ephemeral-port server changes with each start).
  const version = String(Math.floor(Date.now() / 1000));
  const chainObjects = () =>
    servers.flatMap((s, i) =>
      keyServerObjects({ objectId: s.objectId, name: `memrelay-local-${i}`, url: s.url, publicKey: s.publicKey }, { sealPackageId: opts.sealPackageId, version }),
    );
  return {
    servers,
    serverConfigs: servers.map((s) => ({ objectId: s.objectId, weight: 1 })),
    chainObjects,
    publish: async (registry) => {
      for (const o of chainObjects()) await registry.putObject(o);
    },
    stop: async (index) => {
      if (live.delete(index)) await servers[index]!.close();
    },
    close: async () => {
      await Promise.all([...live].map((i) => servers[i]!.close()));
      live.clear();
    },
  };
}
