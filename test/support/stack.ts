// Starts the whole local stack for a black-box suite: private nats-server, fresh database, every service on
// free ports. Returns what a client needs plus handles for fault injection.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../../config/env.ts";
import { createLogger, silentLogger } from "../../config/logger.ts";
import { startLocalStack, type LocalStack } from "../../runtime/local-stack.ts";
import { startNatsServer, type NatsServerHandle } from "./nats-server.ts";
import { createTestDatabase, type TestDatabase } from "./postgres.ts";
import { MemrelayClient } from "../../client/memrelay-client.ts";
import { cachedSessionProvider } from "../../client/session-cache.ts";
import { startTcpProxy, type TcpProxy } from "./tcp-proxy.ts";
import type { RelayerRoles } from "../../runtime/relayer-stack.ts";

export interface TestStack {
  readonly nats: NatsServerHandle;
  readonly database: TestDatabase;
  readonly stack: LocalStack;
  readonly proxy?: TcpProxy;
  client(identity?: Awaited<ReturnType<LocalStack["createIdentity"]>>): Promise<MemrelayClient>;
  teardown(): Promise<void>;
}

/**
 * A stack without an actor host (the test starts and kills its own), one identity and that identity's client: what the
 * crash tests of remember jobs share.
 */
export async function startStackWithoutActorHost(): Promise<{ t: TestStack; client: MemrelayClient; owner: string }> {
  const t = await startTestStack({}, { roles: { gateway: true, projections: true, actors: false } });
  const who = await t.stack.createIdentity();
  return { t, client: await t.client(who), owner: who.owner };
}

/** MEMRELAY_STORE_MODE of the test run: any stack test can run with its memories stored per blob (`MEMRELAY_STORE_MODE=blob npx vitest run …`; quilt is the default). */
function storeModeOfRun(): Record<string, string> {
  const mode = process.env.MEMRELAY_STORE_MODE;
  return mode ? { MEMRELAY_STORE_MODE: mode } : {};
}

/** `database`: where the stack's database comes from (default: a fresh one on the native PostgreSQL). */
export async function startTestStack(env: Record<string, string> = {}, opts: { roles?: RelayerRoles; viaProxy?: boolean; walletFunding?: bigint; database?: () => Promise<TestDatabase> } = {}): Promise<TestStack> {
  const nats = await startNatsServer();
  // Whatever fails from here on, the server and the database go with it (a failed setup must not leave them behind).
  let database: TestDatabase | undefined;
  let dataDir: string | undefined;
  let proxy: TcpProxy | undefined;
  try {
    database = await (opts.database ?? createTestDatabase)();
    return await startOn(nats, database, (d) => (dataDir = d), (p) => (proxy = p), env, opts);
  } catch (err) {
    await proxy?.close().catch(() => undefined);
    await database?.drop().catch(() => undefined);
    await nats.cleanup();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}

async function startOn(
  nats: NatsServerHandle,
  database: TestDatabase,
  onDataDir: (dir: string) => void,
  onProxy: (p: TcpProxy) => void,
  env: Record<string, string>,
  opts: { roles?: RelayerRoles; viaProxy?: boolean; walletFunding?: bigint },
): Promise<TestStack> {
  // Optionally reach Postgres through a proxy the test can cut (a Postgres outage without touching the server).
  const dbUrl = new URL(database.url);
  const proxy = opts.viaProxy ? await startTcpProxy(dbUrl.hostname, Number(dbUrl.port || 5432)) : undefined;
  if (proxy) {
    onProxy(proxy);
    dbUrl.port = String(proxy.port);
  }
  const dataDir = mkdtempSync(join(tmpdir(), "memrelay-data-"));
  onDataDir(dataDir);
  // The hashing embedder unless a test asks for another: fast, and what tests not about semantics rely on (the
  // default without a key is USE-lite, test/paraphrase-recall.test.ts).
  const config = loadConfig({ PORT: "0", BLOBSTORE_PORT: "0", CONSOLE_PORT: "0", SIDECAR_URL: "http://127.0.0.1:0", NATS_URL: nats.url, DATABASE_URL: dbUrl.toString(), MEMRELAY_DATA_DIR: dataDir, MEMRELAY_EMBEDDER: "hashing", ...storeModeOfRun(), ...env });
  const logger = process.env.MEMRELAY_TEST_LOGS ? createLogger({}) : silentLogger;
  const stack = await startLocalStack({ config, logger, databaseUrl: dbUrl.toString(), attemptDelayMs: 10, roles: opts.roles, walletFunding: opts.walletFunding });
  return {
    nats,
    database,
    stack,
    proxy,
    client: async (identity) => {
      const who = identity ?? (await stack.createIdentity());
      const session = cachedSessionProvider({ delegateSecretKey: who.delegateSecretKey, packageId: stack.encryptionStack.packageId, rpcUrl: stack.encryptionStack.rpcUrl });
      return new MemrelayClient({ baseUrl: stack.relayerUrl, delegatePrivateKey: who.delegateSecretKey, accountId: who.accountId, encryptionSession: session });
    },
    teardown: async () => {
      await stack.stop();
      await proxy?.close();
      await database.drop().catch(() => undefined);
      await nats.cleanup();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
