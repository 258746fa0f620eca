// Wires the remember-job machine to its effects. `store`: embed, encrypt, upload the ciphertext (blob mode), or record
// the ciphertext and the quilt it joins (quilt mode; `quilt` then waits for that quilt, or finds its fate after a
// crash, and `gather` joins another when it went out without the job). `record`: record
// the blob object on chain for the owner with namespace and package attributes (in one transaction with the records
// of other jobs in flight, adapters/chain/record-batcher.ts), then index. Both try up to MAX_WALLET_ATTEMPTS wallets
// of the pool (round-robin), reporting each failed attempt, until the machine says the attempts are used up; its
// `fail` effect then records the job's failure. The blob id is committed between
// the two, and the chain record is idempotent per (owner, blob id), so redelivery never duplicates a memory;
// the index row id is the job id.
import { Effect } from "effect";
import type { ActorDefinition } from "../host.ts";
import { Permanent, Transient } from "../host.ts";
import { mayAttemptAgain, rememberJobMachine, type JobContext } from "./remember-job.machine.ts";
import { JOB, JOB_EVENTS, jobEvent, type NewJobEvent, type RememberCommand } from "../../schemas/relayer/remember-job.ts";
import type { BlobPort, EncryptionPort } from "../../adapters/ports.ts";
import type { QuiltOutcome, QuiltWriter } from "../../adapters/blobs/quilt-writer.ts";
import type { QuiltLog } from "./remember-job.quilts.ts";
import { RecordFailed, type RecordBatcher } from "../../adapters/chain/record-batcher.ts";
import { spendsWalletAttempt } from "./wallet-attempts.ts";
import { TextTooLong, type DocumentEmbedder } from "../../adapters/embeddings/scheduler.ts";
import type { Wallet, WalletPool } from "../../adapters/chain/wallet-pool.ts";
import type { LexicalKeyring } from "../../adapters/lexical/keys.ts";
import { documentTerms } from "../../adapters/lexical/terms.ts";
import { storableText } from "../../schemas/text.ts";
import { encodeVectorF32 } from "../../schemas/vector-wire.ts";

export interface RememberJobPorts {
  /** The process's embedding scheduler: windows of long texts, fair across jobs, a deadline per text. */
  readonly embedder: DocumentEmbedder;
  readonly encryption: EncryptionPort;
  readonly blobs: BlobPort;
  /**
   * MEMRELAY_STORE_MODE=quilt: ciphertexts go into quilts gathered across jobs in flight, and the job's blob id is its
   * quilt patch id; absent, each ciphertext is its own blob, sent to its owner.
   */
  readonly quilts?: QuiltWriter;
  /**
   * The quilts' event log: a job whose quilt no live writer of this process holds (its host died, or it was
   * redelivered elsewhere) learns there whether the quilt holds it. Needed by any host that may meet such a job.
   */
  readonly quiltLog?: QuiltLog;
  /** Blob registrations, batched across jobs (adapters/chain/record-batcher.ts). */
  readonly records: RecordBatcher;
  readonly wallets: WalletPool;
  /** Keys of the lexical index: `job.indexed` then carries the text's keyed term hashes (never the tokens). */
  readonly lexical?: LexicalKeyring;
  /** Pause between wallet attempts, growing linearly (the host's schedule, not a machine timer). */
  readonly attemptDelayMs?: number;
  /**
   * How long the blob port lets a store wait for the publisher (BLOBSTORE_STORE_TIMEOUT_MS): an effect that waits on
   * a store is given that long (the host keeps its command alive meanwhile), so a store only queued at the publisher
   * is never given up by the host and sent again behind itself.
   */
  readonly storeTimeoutMs?: number;
}

const encoder = new TextEncoder();

/** Beyond the embedding's deadline and the store's own limit, what the store effect may spend encrypting and uploading. */
const STORE_MARGIN_MS = 120_000;
/** Base64 of a ciphertext recorded in `job.encrypted`. */
const recorded = (ciphertext: Uint8Array) => Buffer.from(ciphertext.buffer, ciphertext.byteOffset, ciphertext.byteLength).toString("base64");

/**
 * The quilt `ctx.quilt`'s answer for this job: the live writer's when it holds the quilt, else the quilt's fate in the
 * event log (read, rebuilt, or abandoned). A job joined to a quilt whose fate cannot be read fails its attempt.
 */
async function quiltOutcome(ports: RememberJobPorts, jobId: string, ctx: JobContext): Promise<QuiltOutcome> {
  const live = ports.quilts?.join(ctx.quilt!, jobId, Buffer.from(ctx.ciphertext!, "base64"));
  if (live) return live;
  if (!ports.quiltLog) throw new Error(`job joined quilt ${ctx.quilt} but this host has no quilt log to find it in`);
  return ports.quiltLog.recover(ctx.quilt!, jobId);
}

/** Stores the ciphertext as its own blob, sent to its owner (blob mode), trying wallets as the machine allows. */
function storeBlob(ctx: JobContext, ports: RememberJobPorts, ciphertext: Uint8Array, embedded: { vector_f32: string; embedder: string }) {
  return withWallets(ctx, ports, async (nextWallet) => ({ value: await ports.blobs.store(ciphertext, { sendObjectTo: ctx.owner }), wallet: nextWallet() }), ({ value: stored }) =>
    jobEvent(JOB_EVENTS.uploaded, { blob_id: stored.blobId, size: stored.size, ...embedded }),
  );
}

/** What an attempt produced, and the wallet that paid for it. */
interface Paid<A> {
  readonly value: A;
  readonly wallet: Wallet;
}

/**
 * Runs `attempt` until it succeeds or the machine allows no further attempt (mayAttemptAgain), or fails Transient on
 * an outage of the relayer's own services, which spends no attempt (wallet-attempts.ts); an attempt that pays
 * itself takes the next wallet of the pool from `nextWallet` (the blob registrations' batcher picks its own). Returns
 * the facts: the failed attempts, then the success event if there was one. Whether the job fails is the machine's call.
 */
function withWallets<A>(ctx: JobContext, ports: RememberJobPorts, attempt: (nextWallet: () => Wallet) => Promise<Paid<A>>, onSuccess: (paid: Paid<A>) => NewJobEvent) {
  return Effect.gen(function* () {
    const events: NewJobEvent[] = [];
    let attempts = ctx.attempts;
    while (mayAttemptAgain(attempts)) {
      let offered: Wallet | undefined;
      const nextWallet = () => (offered ??= ports.wallets.next());
      const outcome = yield* Effect.tryPromise({ try: () => attempt(nextWallet), catch: (e) => e }).pipe(Effect.result);
      if (outcome._tag === "Success") {
        events.push(onSuccess(outcome.success));
        return events;
      }
      if (!spendsWalletAttempt(outcome.failure)) {
        // The facts so far stand; with none, the host retries this effect once the outage passes.
        if (events.length) return events;
        return yield* Effect.fail(new Transient(`backing service unavailable: ${outcome.failure instanceof Error ? outcome.failure.message : String(outcome.failure)}`));
      }
      attempts++;
      const wallet = outcome.failure instanceof RecordFailed ? outcome.failure.wallet : nextWallet();
      const error = outcome.failure instanceof Error ? outcome.failure.message : String(outcome.failure);
      events.push(jobEvent(JOB_EVENTS.uploadAttemptFailed, { attempt: attempts, wallet: wallet.address, error }));
      if (mayAttemptAgain(attempts) && ports.attemptDelayMs) yield* Effect.sleep(ports.attemptDelayMs * attempts);
    }
    return events;
  });
}

export function rememberJobActor(ports: RememberJobPorts): ActorDefinition<RememberCommand, typeof rememberJobMachine, NewJobEvent> {
  return {
    aggregateType: JOB,
    machine: rememberJobMachine,
    // 2: the context keeps the vector as vector_f32 (a version-1 snapshot is ignored; the job rehydrates from events)
    snapshotVersion: 2,
    freshOnFirstDelivery: true,
    // Job lookups read a finished job from its events (projections/relayer/job-lookup.ts): no snapshot write per job.
    noFinalSnapshot: true,
    setAside: (command, error) => {
      const d = command?.data;
      const who = d && typeof d.owner === "string" && typeof d.namespace === "string" ? { owner: storableText(d.owner), namespace: storableText(d.namespace) } : {};
      return [jobEvent(JOB_EVENTS.failed, { error: `set aside: ${error}`, attempts: 0, set_aside: true, ...who })];
    },
    // A long text's embedding may outlast the host's default effect timeout; its own deadline bounds it instead. The
    // effects that wait on a store (the blob's, or the quilt's) get the store's own limit on top.
    effectBudgetMs: (effect, command) => {
      const store = (ports.storeTimeoutMs ?? 0) + STORE_MARGIN_MS;
      if (effect === "store") return store + (typeof command.data?.text === "string" ? ports.embedder.deadlineMsFor(command.data.text) : 0);
      return effect === "gather" || effect === "quilt" ? store : 0;
    },
    decide: (snapshot, command) => {
      if (command.type !== "remember.start" || snapshot.value !== "pending") return [];
      const d = command.data;
      return [jobEvent(JOB_EVENTS.accepted, { owner: d.owner, namespace: d.namespace, accepted_at: d.accepted_at, text_bytes: Buffer.byteLength(d.text) })];
    },
    effects: {
      store: ({ aggregateId, context: ctx, command }) =>
        Effect.gen(function* () {
          // Keyed by the job: a redelivery while this embedding runs joins it instead of queueing the text again.
          const vector = yield* Effect.tryPromise({
            try: () => ports.embedder.embedDocument(aggregateId, command.data.text),
            catch: (e) => (e instanceof TextTooLong ? new Permanent(e.message) : new Transient(`embedding failed: ${(e as Error).message}`)),
          });
          const ciphertext = yield* Effect.tryPromise({
            try: () => ports.encryption.encrypt(ctx.owner, ctx.namespace, encoder.encode(command.data.text)),
            catch: (e) => new Transient(`encryption failed: ${(e as Error).message}`),
          });
          const embedded = { vector_f32: encodeVectorF32(vector), embedder: ports.embedder.name };
          if (ports.quilts) {
            // The ciphertext and the quilt it joins are recorded (with the decision, in one commit) before the
            // writer takes it: from here on it is never encrypted again, and never put in a second quilt.
            return [
              jobEvent(JOB_EVENTS.encrypted, { ciphertext: recorded(ciphertext), size: ciphertext.byteLength, ...embedded }),
              jobEvent(JOB_EVENTS.quiltJoined, { quilt: ports.quilts.reserve(ciphertext.byteLength) }),
            ];
          }
          return yield* storeBlob(ctx, ports, ciphertext, embedded);
        }),
      // The recorded ciphertext joins a quilt (again, after its first quilt went out without it); a host that runs
      // in blob mode now stores it as its own blob.
      gather: ({ context: ctx }) => {
        const ciphertext = Buffer.from(ctx.ciphertext!, "base64");
        if (ports.quilts) return Effect.succeed([jobEvent(JOB_EVENTS.quiltJoined, { quilt: ports.quilts.reserve(ciphertext.byteLength) })]);
        return storeBlob(ctx, ports, ciphertext, { vector_f32: ctx.vector_f32!, embedder: ctx.embedder ?? ports.embedder.name });
      },
      quilt: ({ aggregateId, context: ctx }) =>
        withWallets(ctx, ports, async (nextWallet) => ({ value: await quiltOutcome(ports, aggregateId, ctx), wallet: nextWallet() }), ({ value: outcome }) =>
          outcome.kind === "left"
            ? jobEvent(JOB_EVENTS.quiltLeft, { quilt: ctx.quilt!, reason: outcome.reason })
            : jobEvent(JOB_EVENTS.uploaded, { blob_id: outcome.quiltPatchId, size: ctx.size ?? 0, vector_f32: ctx.vector_f32!, embedder: ctx.embedder ?? ports.embedder.name }),
        ),
      // The machine gave up (its guard found the wallet attempts used up): record it with the last attempt's error.
      fail: ({ context: ctx }) =>
        Effect.succeed([jobEvent(JOB_EVENTS.failed, { error: `upload failed after ${ctx.attempts} wallet attempts: ${ctx.error ?? "unknown error"}`, attempts: ctx.attempts })]),
      record: ({ context: ctx, command }) => {
        const lexical = ports.lexical ? documentTerms(ports.lexical.forOwner(ctx.owner), command.data.text) : undefined;
        return withWallets(
          ctx,
          ports,
          async () => {
            const { object, wallet } = await ports.records.record({ owner: ctx.owner, namespace: ctx.namespace, blobId: ctx.blob_id!, size: ctx.size ?? 0 });
            return { value: object, wallet };
          },
          ({ value: object, wallet: w }) =>
            jobEvent(JOB_EVENTS.indexed, {
              object_id: object.objectId,
              wallet: w.address,
              owner: ctx.owner,
              namespace: ctx.namespace,
              blob_id: ctx.blob_id!,
              vector_f32: ctx.vector_f32!,
              embedder: ports.embedder.name,
              importance: command.data.importance,
              size: ctx.size ?? 0,
              created_at: command.issued_at,
              ...(lexical ? { lexical, submitted_at: command.data.accepted_at, position: command.data.position ?? 0 } : {}),
            }),
        );
      },
    },
  };
}
