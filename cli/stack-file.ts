// Where a running `memrelay start` can be reached: written to <data dir>/stack.json (0600: it names the database)
// once the stack is up and removed when it stops, so operator commands in a second terminal need no variables.
// Flags and environment variables always win over the file.
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { dataDirOf } from "../config/env.ts";

export interface StackFile {
  readonly pid: number;
  readonly started_at: string;
  readonly data_dir: string;
  readonly nats_url: string;
  readonly database_url: string;
  readonly relayer_url: string;
  /** Every gateway of a `memrelay start --cluster` (the first is relayer_url); clients may use any. */
  readonly relayer_urls?: readonly string[];
  readonly blobstore_url: string;
  readonly console_url: string;
  readonly chain_rpc_url: string;
  /** The same ledger's gRPC API (gRPC-web), for CHAIN_GRPC_URL. */
  readonly chain_grpc_url?: string;
}

export const stackFilePath = (dataDir: string) => join(dataDir, "stack.json");

export function writeStackFile(info: StackFile): void {
  const path = stackFilePath(info.data_dir);
  writeFileSync(path, JSON.stringify(info, null, 2) + "\n", { mode: 0o600 });
  chmodSync(path, 0o600);
}

export function removeStackFile(dataDir: string): void {
  rmSync(stackFilePath(dataDir), { force: true });
}

/** The running stack of a data directory, or undefined (no file, unreadable, or its process is gone). */
export function readStackFile(dataDir: string): StackFile | undefined {
  const path = stackFilePath(dataDir);
  if (!existsSync(path)) return undefined;
  try {
    const info = JSON.parse(readFileSync(path, "utf8")) as StackFile;
    process.kill(info.pid, 0);
    return info;
  } catch {
    return undefined;
  }
}

/**
 * The environment an operator command runs with: NATS_URL and DATABASE_URL from the running stack of the data
 * directory (MEMRELAY_DATA_DIR, default ~/.memrelay) where the environment does not set them.
 */
export function operatorEnv(env: Record<string, string | undefined>): Record<string, string | undefined> {
  if (env.NATS_URL && env.DATABASE_URL) return env;
  const stack = readStackFile(dataDirOf(env));
  if (!stack) return env;
  return { ...env, NATS_URL: env.NATS_URL ?? stack.nats_url, DATABASE_URL: env.DATABASE_URL ?? stack.database_url };
}
