// A blob storage service for a test file: its own nats-server, database and data directory, stopped together.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNatsServer, type NatsServerHandle } from "./nats-server.ts";
import { createTestDatabase, type TestDatabase } from "./postgres.ts";
import { startBlobstore } from "../../runtime/blobstore.ts";
import type { BlobstoreHandle, BlobstoreOptions } from "../../gateway/blobstore/options.ts";
import { httpClient, type HttpClient } from "./blobstore-testkit.ts";

export interface TestBlobstore {
  readonly nats: NatsServerHandle;
  readonly db: TestDatabase;
  readonly dataDir: string;
  readonly svc: BlobstoreHandle;
  readonly http: HttpClient;
  /** NATS_URL and DATABASE_URL, for the operator commands. */
  readonly env: Record<string, string>;
  /** Stops everything (a service the test stopped itself is fine). */
  stop(): Promise<void>;
}

export async function startTestBlobstore(dbPrefix: string, opts: Partial<BlobstoreOptions> = {}): Promise<TestBlobstore> {
  const nats = await startNatsServer();
  const db = await createTestDatabase(dbPrefix);
  const dataDir = mkdtempSync(join(tmpdir(), "memrelay-bs-"));
  const svc = await startBlobstore({ natsUrl: nats.url, databaseUrl: db.url, port: 0, dataDir, gc: { intervalMs: 0 }, ...opts });
  const http = httpClient(svc.url);
  return {
    nats,
    db,
    dataDir,
    svc,
    http,
    env: { NATS_URL: nats.url, DATABASE_URL: db.url },
    stop: async () => {
      http.close();
      await svc.stop().catch(() => undefined);
      await db.drop();
      await nats.cleanup();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
