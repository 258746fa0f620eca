// Correctness under batching (issue 15): an actor host that dies anywhere between a job's blob upload and its indexing
// commit — right after the upload, after the blob id is committed, or after the batch's chain record — leaves, once
// the command is redelivered to another host, exactly one blob object on chain and one memory, under the blob id the
// job reports. The "death" is a host whose port call never returns and that stops taking work: its command is never
// acknowledged, so JetStream redelivers it after the ack wait, as it would after kill -9.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startStackWithoutActorHost, type TestStack } from "./support/stack.ts";
import { ActorHost } from "../actors/host.ts";
import { rememberJobActor } from "../actors/relayer/remember-job.actor.ts";
import { createScheduler } from "../adapters/embeddings/select.ts";
import { embeddingFromEnv } from "../config/env.ts";
import { RecordBatcher } from "../adapters/chain/record-batcher.ts";
import { WalletPool } from "../adapters/chain/wallet-pool.ts";
import type { BlobPort, ChainPort } from "../adapters/ports.ts";
import { silentLogger } from "../config/logger.ts";
import type { MemrelayClient } from "../client/memrelay-client.ts";

type CrashPoint = "after the upload" | "after the blob id is committed" | "after the batch's chain record";

let t: TestStack;
let client: MemrelayClient;
let owner: string;

beforeAll(async () => void ({ t, client, owner } = await startStackWithoutActorHost()), 120_000);
afterAll(async () => t?.teardown());

/** `target` with one method replaced (test double over a real port). */
function withMethod<T extends object>(target: T, name: keyof T, fn: unknown): T {
  return new Proxy(target, {
    get(obj, prop) {
      if (prop === name) return fn;
      const v = Reflect.get(obj, prop, obj);
      return typeof v === "function" ? v.bind(obj) : v;
    },
  });
}

const never = () => new Promise<never>(() => undefined);

function host(ports: { chain: ChainPort; blobs: BlobPort }) {
  const wallets = new WalletPool(t.stack.config.serverChainPrivateKeys);
  return new ActorHost(
    t.stack.log,
    rememberJobActor({ embedder: createScheduler(t.stack.embedder, embeddingFromEnv({})), encryption: t.stack.encryption, blobs: ports.blobs, records: new RecordBatcher(ports.chain, wallets), wallets, attemptDelayMs: 10 }),
    silentLogger,
    { concurrency: 4, ackWaitMs: 1_500, effectTimeoutMs: 600_000, network: t.stack.chain.network },
  );
}

/** The real ports, except that the call at `point` hangs forever (after doing its work, where the point says so). */
function dyingPorts(point: CrashPoint, reached: () => void): { chain: ChainPort; blobs: BlobPort } {
  const { chain, blobs } = t.stack;
  if (point === "after the upload") {
    return { chain, blobs: withMethod(blobs, "store", async (...args: Parameters<BlobPort["store"]>) => (await blobs.store(...args), reached(), never())) };
  }
  const recordBlobs = async (...args: Parameters<ChainPort["recordBlobs"]>) => {
    if (point === "after the batch's chain record") await chain.recordBlobs(...args);
    reached();
    return never();
  };
  return { chain: withMethod(chain, "recordBlobs", recordBlobs), blobs };
}

describe("an actor host dying between a job's upload and its indexing", () => {
  for (const point of ["after the upload", "after the blob id is committed", "after the batch's chain record"] as const) {
    it(`${point}: the redelivered job records one blob and indexes one memory`, async () => {
      const namespace = `crash-${point.replace(/[^a-z]+/g, "-")}`;
      let uploads = 0;
      const counted = withMethod(t.stack.blobs, "store", (...args: Parameters<BlobPort["store"]>) => (uploads++, t.stack.blobs.store(...args)));
      let crashed!: () => void;
      const atCrash = new Promise<void>((r) => (crashed = r));
      const first = host(dyingPorts(point, crashed));
      await first.start();
      const { job_id } = await client.remember(`the ferry timetable changes in ${point}`, namespace);
      await atCrash;
      void first.stop(); // takes no more work; its job never finishes
      uploads = 0;

      const second = host({ chain: t.stack.chain, blobs: counted });
      await second.start();
      try {
        const job = await client.waitForJob(job_id, 60_000);
        expect(job.status).toBe("done");
        // A job whose blob id was not committed uploads again (the first blob is an orphan, never recorded); the others reuse it.
        expect(uploads).toBe(point === "after the upload" ? 1 : 0);
        const objects = await t.stack.chain.listBlobs(owner, { namespace, limit: 10 });
        expect(objects.map((o) => o.blobId)).toEqual([job.blob_id]);
        const rows = await t.stack.db.query<{ id: string; blob_id: string }>("SELECT id::text, blob_id FROM memories WHERE owner = $1 AND namespace = $2", [owner, namespace]);
        expect(rows.rows).toEqual([{ id: job_id, blob_id: job.blob_id }]);
      } finally {
        await second.stop();
      }
    }, 90_000);
  }
});
