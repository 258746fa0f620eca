// Wires the bucket machine to its effects. `execute_policy`: co-sign the reserved bytes (the client signed them
// with its service key; the console's sponsor pays the gas) and execute them on chain — idempotent, since the
// ledger answers a repeated transaction from its receipt. `provision`: create the blob-store bucket holding the
// files. `deprovision`: remove it (with any bytes left) and release the bucket's name.
import { Effect } from "effect";
import type { ActorDefinition } from "../host.ts";
import { Transient } from "../host.ts";
import { PortError, SignatureRejected } from "../../adapters/ports.ts";
import { AGG, CMD, EV, consoleEvent, type NewConsoleEvent } from "../../schemas/console/events.ts";
import type { ConsoleCommand } from "../../schemas/console/commands.ts";
import { CODE } from "../../schemas/console/http.ts";
import { cosign } from "../../adapters/chain/sui/signatures.ts";
import { bucketPolicyType } from "../../schemas/chain.ts";
import { StorageError } from "../../adapters/file-storage/blobstore-http.ts";
import { bucketMachine } from "./bucket.machine.ts";
import type { ConsoleActorPorts } from "./ports.ts";

export const transientOf = (what: string) => (e: unknown) => new Transient(`${what}: ${e instanceof Error ? e.message : String(e)}`);

export function bucketActor(ports: ConsoleActorPorts): ActorDefinition<ConsoleCommand, typeof bucketMachine, NewConsoleEvent> {
  return {
    aggregateType: AGG.bucket,
    machine: bucketMachine,
    snapshotVersion: 1,
    decide: (snapshot, command) => {
      const state = snapshot.value as string;
      switch (command.type) {
        case CMD.bucketCreate:
          return state === "none" ? [consoleEvent(EV.bucketCreated, command.data)] : [];
        case CMD.bucketReserve:
          return state === "none" ? [consoleEvent(EV.bucketReserved, command.data)] : [];
        case CMD.bucketFinalize:
          return state === "pending_policy" ? [consoleEvent(EV.bucketFinalizeRequested, { requested_by: command.data.requested_by })] : [];
        case CMD.bucketUpdate:
          return state === "active" ? [consoleEvent(EV.bucketUpdated, command.data)] : [];
        case CMD.bucketDelete:
          return state === "active" || state === "pending_policy" ? [consoleEvent(EV.bucketDeleteRequested, command.data)] : [];
        default:
          return [];
      }
    },
    effects: {
      execute_policy: ({ context, command }) =>
        Effect.gen(function* () {
          const ctx = context;
          if (command.type !== CMD.bucketFinalize) return yield* Effect.fail(new Transient("finalize effect without its command"));
          const signed = cosign(ctx.tx_bytes!, command.data.signature, ports.sponsorKey);
          const outcome = yield* Effect.tryPromise({ try: () => ports.chain.execute(signed), catch: (e) => e }).pipe(Effect.result);
          if (outcome._tag === "Failure") {
            const e = outcome.failure;
            if (e instanceof PortError && e.kind !== "unavailable") {
              // Only a signature that does not verify is the client's to correct (the route answers it 400 bad_request); any
              // other refusal, forbidden ones included (a signer other than the sender, the sponsor not the gas owner), is the chain's.
              return [consoleEvent(EV.bucketFinalizeFailed, { code: e instanceof SignatureRejected ? CODE.invalidSignature : CODE.chainRejected, error: e.message })];
            }
            return yield* Effect.fail(transientOf("chain")(e));
          }
          const object = outcome.success.objects.find((o) => o.type === bucketPolicyType(ports.chain.packageId));
          if (!object) return [consoleEvent(EV.bucketFinalizeFailed, { code: CODE.chainRejected, error: "the transaction created no bucket policy" })];
          return [consoleEvent(EV.bucketPolicyCreated, { policy_id: object.object_id, chain_digest: outcome.success.digest, policy: object })];
        }),
      provision: ({ context }) =>
        Effect.tryPromise({ try: () => ports.storage.ensureBucket(context.bucket!.storage_bucket_name), catch: transientOf("storage") }).pipe(
          Effect.map(() => [consoleEvent(EV.bucketActivated, { activated_at: ports.clog.clock.now() })]),
        ),
      deprovision: ({ context, aggregateId }) =>
        Effect.gen(function* () {
          const ctx = context;
          yield* Effect.tryPromise({
            try: async () => {
              await ports.storage.deleteBucket(ctx.bucket!.storage_bucket_name).catch((err) => {
                if (err instanceof StorageError && !err.transient) return; // not ours any more: nothing to release
                throw err;
              });
              if (ctx.name_claim) await ports.clog.release(ctx.name_claim, aggregateId);
            },
            catch: transientOf("deprovision"),
          });
          return [consoleEvent(EV.bucketDeleted, { deleted_at: ports.clog.clock.now(), space_id: ctx.bucket!.space_id })];
        }),
    },
  };
}
