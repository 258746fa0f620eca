// A PostgreSQL primary and a hot standby of its own (scripts/pg-standby.sh), for tests of reads from replicas: the
// system cluster cannot replicate (no replication line in pg_hba.conf) and is not ours to change.
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { freePort } from "./free-port.ts";
import type { TestDatabase } from "./postgres.ts";

const script = fileURLToPath(new URL("../../scripts/pg-standby.sh", import.meta.url));

export interface PrimaryWithStandby {
  /** Where the clusters live (primary/, standby/, their logs). */
  readonly dataDir: string;
  readonly primaryUrl: string;
  readonly standbyUrl: string;
  /** A database on the primary (with pgvector), replicated to the standby. */
  database(): Promise<TestDatabase>;
  stopStandby(): void;
  startStandby(): void;
  /** Stops the primary as a crash does (immediate mode), and starts it again (crash recovery). */
  stopPrimary(): void;
  startPrimary(): void;
  /** SIGSTOPs every process of the standby: it accepts connections and answers nothing (a gray failure). */
  freezeStandby(): void;
  thawStandby(): void;
  /** Stops applying WAL on the standby (it keeps receiving it): a standby that lags. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  remove(): void;
}

const run = (...args: string[]) => execFileSync("bash", [script, ...args], { stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 });

async function onServer(url: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

export async function startPrimaryWithStandby(): Promise<PrimaryWithStandby> {
  const dir = mkdtempSync(join(tmpdir(), "memrelay-pg-standby-"));
  const [primaryPort, standbyPort] = [await freePort(), await freePort()];
  try {
    run("create", dir, String(primaryPort), String(standbyPort));
  } catch (err) {
    run("remove", dir);
    throw err;
  }
  const primaryUrl = `postgres://postgres@127.0.0.1:${primaryPort}/postgres`;
  const standbyUrl = `postgres://postgres@127.0.0.1:${standbyPort}/postgres`;
  const inDb = (url: string, name: string) => url.replace(/\/postgres$/, `/${name}`);
  return {
    dataDir: dir,
    primaryUrl,
    standbyUrl,
    database: async () => {
      const name = "memrelay";
      await onServer(primaryUrl, `CREATE DATABASE ${name}`);
      await onServer(inDb(primaryUrl, name), "CREATE EXTENSION IF NOT EXISTS vector");
      return { name, url: inDb(primaryUrl, name), drop: async () => onServer(primaryUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
    },
    stopStandby: () => void run("stop-standby", dir),
    startStandby: () => void run("start-standby", dir),
    stopPrimary: () => void run("stop-primary", dir),
    startPrimary: () => void run("start-primary", dir),
    freezeStandby: () => void run("freeze-standby", dir),
    thawStandby: () => void run("thaw-standby", dir),
    pauseReplay: () => onServer(standbyUrl, "SELECT pg_wal_replay_pause()"),
    resumeReplay: () => onServer(standbyUrl, "SELECT pg_wal_replay_resume()"),
    remove: () => void run("remove", dir),
  };
}

/** The standby's URL for the database `database()` made. */
export const standbyDatabaseUrl = (s: PrimaryWithStandby, db: TestDatabase): string => s.standbyUrl.replace(/\/postgres$/, `/${db.name}`);
