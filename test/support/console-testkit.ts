// A console on its own backbone for tests and benchmarks: private nats-server, fresh database, the local ledger,
// the blob store and the console on free ports. The full composition (`memrelay start`) is runtime/local-stack.ts.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openEventLog, type EventLog } from "../../eventlog/connection.ts";
import { createPool, type Db } from "../../db/pool.ts";
import { createLogger, silentLogger, type Logger } from "../../config/logger.ts";
import { LocalChain } from "../../adapters/chain/local/local-chain.ts";
import { generateKeypair } from "../../adapters/chain/local/accounts.ts";
import { startBlobstore } from "../../runtime/blobstore.ts";
import type { BlobstoreHandle } from "../../gateway/blobstore/options.ts";
import { startNatsServer, type NatsServerHandle } from "./nats-server.ts";
import { createTestDatabase, type TestDatabase } from "./postgres.ts";
import { startConsole, type ConsoleHandle, type ConsoleLimits } from "../../runtime/console.ts";
import { provisionSponsor, provisionStorage } from "../../runtime/console-provision.ts";

export interface ConsoleTestStack {
  readonly nats: NatsServerHandle;
  readonly database: TestDatabase;
  readonly log: EventLog;
  readonly db: Db;
  readonly chain: LocalChain;
  readonly blobstore: BlobstoreHandle;
  readonly console: ConsoleHandle;
  readonly storage: { url: string; apiKey: string };
  readonly logger: Logger;
  teardown(): Promise<void>;
}

export async function startConsoleTestStack(opts: { limits?: ConsoleLimits; actorConcurrency?: number } = {}): Promise<ConsoleTestStack> {
  const nats = await startNatsServer();
  const database = await createTestDatabase("memrelay_console");
  const dataDir = mkdtempSync(join(tmpdir(), "memrelay-console-"));
  const logger = process.env.MEMRELAY_TEST_LOGS ? createLogger({}) : silentLogger;
  const log = await openEventLog({ servers: nats.url, name: "console-test" });
  const db = createPool(database.url, 16);
  const operator = generateKeypair().secretKey;
  const chain = await LocalChain.open(log, { packageId: "0x" + "a1".repeat(32), network: "localnet", operatorKey: operator });
  const blobstore = await startBlobstore({ log, db, port: 0, dataDir: join(dataDir, "blobstore"), logger, gc: { intervalMs: 0 } });
  const storage = await provisionStorage({ log, db, blobstoreUrl: blobstore.url, runners: blobstore.runners, dataDir });
  const sponsorSecretKey = await provisionSponsor({ chain, operatorSecretKey: operator, dataDir });
  const console = await startConsole({ log, db, chain, storage, sponsorSecretKey, port: 0, logger, limits: opts.limits, actorConcurrency: opts.actorConcurrency });
  return {
    nats,
    database,
    log,
    db,
    chain,
    blobstore,
    console,
    storage,
    logger,
    async teardown() {
      await console.stop();
      await blobstore.stop();
      await chain.close();
      await log.close().catch(() => undefined);
      await db.end().catch(() => undefined);
      await database.drop().catch(() => undefined);
      await nats.cleanup();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
