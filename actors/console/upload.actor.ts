// Wires the upload machine to its effects (see upload.machine.ts). A worker taking the command records the job as
// queued and started together with the outcome of `commit`, a read-only check: repeating it after a crash changes
// nothing.
import { Effect } from "effect";
import { prepared } from "../../db/pool.ts";
import type { ActorDefinition } from "../host.ts";
import { Transient } from "../host.ts";
import type { CommandEnvelope } from "../../schemas/envelope.ts";
import { AGG, CMD, EV, type UploadQueued } from "../../schemas/console/events.ts";
import { CODE } from "../../schemas/console/http.ts";
import { newEvent } from "../../eventlog/event-store.ts";
import { transientOf } from "./bucket.actor.ts";
import { uploadMachine, type UploadContext } from "./upload.machine.ts";
import type { ConsoleActorPorts } from "./ports.ts";

const failed = (code: string, message: string) => [newEvent(EV.uploadFailed, { code, message, failed_at: new Date().toISOString() })];

/** The blob store object holding a file: `<storage bucket>/<key>`. */
export const storageObjectId = (u: Pick<UploadQueued, "storage_bucket_name" | "storage_key">) => `${u.storage_bucket_name}/${u.storage_key}`;

export function uploadActor(ports: ConsoleActorPorts): ActorDefinition<CommandEnvelope> {
  return {
    aggregateType: AGG.upload,
    machine: uploadMachine,
    snapshotVersion: 2,
    freshOnFirstDelivery: true,
    // the status route reads the job's last commit from the log (gateway/console/service.ts uploadView)
    noFinalSnapshot: true,
    decide: (snapshot, command) =>
      command.type === CMD.uploadStart && snapshot.value === "none"
        ? [newEvent(EV.uploadQueued, command.data as UploadQueued), newEvent(EV.uploadStarted, { started_at: new Date().toISOString() })]
        : [],
    effects: {
      commit: ({ context }) =>
        Effect.gen(function* () {
          const u = (context as UploadContext).upload!;
          const [bucket, stored, quota] = yield* Effect.tryPromise({
            try: () =>
              Promise.all([
                ports.clog.last(AGG.bucket, u.bucket_id),
                ports.storage.stat(u.storage_bucket_name, u.storage_key),
                ports.db.query<{ storage_used: string; storage_cap: string }>(prepared("SELECT storage_used, storage_cap FROM console_spaces WHERE space_id = $1", [u.space_id])),
              ]),
            catch: transientOf("commit checks"),
          });
          if (!bucket || bucket.events.some((e) => e.type === EV.bucketDeleteRequested || e.type === EV.bucketDeleted)) {
            return failed("bucket_deleted", "the bucket was deleted while the file was uploading");
          }
          if (!stored) return failed("blob_missing", "the uploaded bytes are not in storage");
          if (stored.blob_id !== u.blob_id || stored.size !== u.size) return failed("blob_mismatch", "the stored bytes differ from the uploaded ones");
          const row = quota.rows[0];
          if (row && Number(row.storage_used) + u.size > Number(row.storage_cap)) {
            return failed(CODE.quotaExceeded, `the space's storage quota of ${row.storage_cap} bytes would be exceeded`);
          }
          return [newEvent(EV.uploadCompleted, { storage_object_id: storageObjectId(u), completed_at: new Date().toISOString(), bucket_id: u.bucket_id, space_id: u.space_id, size: u.size })];
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
