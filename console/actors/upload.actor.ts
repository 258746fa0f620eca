// Wires the upload machine to its effects (see upload.machine.ts). The chain record is idempotent per (owner, blob
// id); the file actor's record command carries a deterministic id, so a repeated step changes nothing.
import { Effect } from "effect";
import type { ActorDefinition } from "../../actors/host.ts";
import { Transient } from "../../actors/host.ts";
import type { CommandEnvelope } from "../../schemas/envelope.ts";
import { PortError } from "../../adapters/ports.ts";
import { AGG, CMD, EV, type FileRecordCommandData, type UploadQueued } from "../../schemas/console-events.ts";
import { CODE } from "../../schemas/console-http.ts";
import { newEvent } from "../log.ts";
import { transientOf } from "./bucket.actor.ts";
import { uploadMachine, type UploadContext } from "./upload.machine.ts";
import type { ConsoleActorPorts } from "./ports.ts";

const failed = (code: string, message: string) => [newEvent(EV.uploadFailed, { code, message, failed_at: new Date().toISOString() })];

export function uploadActor(ports: ConsoleActorPorts): ActorDefinition<CommandEnvelope> {
  return {
    aggregateType: AGG.upload,
    machine: uploadMachine,
    snapshotVersion: 1,
    freshOnFirstDelivery: true,
    decide: (snapshot, command) => (command.type === CMD.uploadStart && snapshot.value === "none" ? [newEvent(EV.uploadQueued, command.data as UploadQueued)] : []),
    effects: {
      begin: ({ context }) =>
        Effect.gen(function* () {
          const u = (context as UploadContext).upload!;
          const last = yield* Effect.tryPromise({ try: () => ports.clog.last(AGG.bucket, u.bucket_id), catch: transientOf("event log") });
          const gone = !last || last.events.some((e) => e.type === EV.bucketDeleteRequested || e.type === EV.bucketDeleted);
          if (gone) return failed("bucket_deleted", "the bucket was deleted while the file was uploading");
          return [newEvent(EV.uploadStarted, { started_at: new Date().toISOString() })];
        }),
      verify: ({ context }) =>
        Effect.gen(function* () {
          const u = (context as UploadContext).upload!;
          const stored = yield* Effect.tryPromise({ try: () => ports.storage.stat(u.storage_bucket_name, u.storage_key), catch: transientOf("storage") });
          if (!stored) return failed("blob_missing", "the uploaded bytes are not in storage");
          if (stored.blob_id !== u.blob_id || stored.size !== u.size) return failed("blob_mismatch", "the stored bytes differ from the uploaded ones");
          const quota = yield* Effect.tryPromise({
            try: () => ports.db.query<{ storage_used: string; storage_cap: string }>("SELECT storage_used, storage_cap FROM console_spaces WHERE space_id = $1", [u.space_id]),
            catch: transientOf("read models"),
          });
          const row = quota.rows[0];
          if (row && Number(row.storage_used) + u.size > Number(row.storage_cap)) {
            return failed(CODE.quotaExceeded, `the space's storage quota of ${row.storage_cap} bytes would be exceeded`);
          }
          return [newEvent(EV.uploadProgressed, { progress: 0.5, step: "verified" })];
        }),
      record: ({ context, aggregateId }) =>
        Effect.gen(function* () {
          const u = (context as UploadContext).upload!;
          const outcome = yield* Effect.tryPromise({
            try: () => ports.chain.recordBlob({ owner: u.owner_address, namespace: `console:${u.bucket_id}`, blobId: u.blob_id, size: u.size, walletSecretKey: ports.sponsorKey }),
            catch: (e) => e,
          }).pipe(Effect.result);
          if (outcome._tag === "Failure") {
            const e = outcome.failure;
            if (e instanceof PortError && e.kind !== "unavailable") return failed(CODE.chainRejected, `the blob object could not be recorded: ${e.message}`);
            return yield* Effect.fail(transientOf("chain")(e));
          }
          const completedAt = new Date().toISOString();
          const record: FileRecordCommandData = { ...u, storage_object_id: outcome.success.objectId, completed_at: completedAt };
          const cmd: CommandEnvelope = {
            type: CMD.fileRecord,
            version: 1,
            id: `file-record-${aggregateId}`,
            aggregate: `${AGG.file}.${aggregateId}`,
            issued_at: completedAt,
            correlation_id: aggregateId,
            data: record,
          };
          yield* Effect.tryPromise({ try: () => ports.clog.publish(AGG.file, aggregateId, cmd), catch: transientOf("work queue") });
          return [
            newEvent(EV.uploadCompleted, { storage_object_id: outcome.success.objectId, completed_at: completedAt, bucket_id: u.bucket_id, space_id: u.space_id, size: u.size }),
          ];
        }),
      cleanup: ({ context, aggregateId }) =>
        Effect.tryPromise({
          try: async () => {
            const u = (context as UploadContext).upload!;
            await ports.storage.remove(u.storage_bucket_name, u.storage_key).catch((err) => {
              if ((err as { transient?: boolean }).transient) throw err;
            });
            await ports.clog.release(u.name_claim, aggregateId);
          },
          catch: (e) => new Transient(`cleanup: ${(e as Error).message}`),
        }).pipe(Effect.map(() => [newEvent(EV.uploadCleaned, { cleaned_at: new Date().toISOString() })])),
    },
  };
}
