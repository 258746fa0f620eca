// Wires the sponsorship machine to its effect: `execute` co-signs the reserved bytes with the console's sponsor
// (which pays the gas; the client's service key needs no balance), submits them, and records every object the
// transaction wrote — the access index projection mirrors those into the grants uploads and downloads check.
import { Effect } from "effect";
import type { ActorDefinition } from "../host.ts";
import { Transient } from "../host.ts";
import { PortError, SignatureRejected } from "../../adapters/ports.ts";
import { AGG, CMD, EV, consoleEvent, type NewConsoleEvent } from "../../schemas/console/events.ts";
import type { ConsoleCommand } from "../../schemas/console/commands.ts";
import { CODE } from "../../schemas/console/http.ts";
import { cosign } from "../../adapters/chain/sui/signatures.ts";
import { transientOf } from "./bucket.actor.ts";
import { sponsorMachine } from "./sponsor.machine.ts";
import type { ConsoleActorPorts } from "./ports.ts";

export function sponsorActor(ports: ConsoleActorPorts): ActorDefinition<ConsoleCommand, typeof sponsorMachine, NewConsoleEvent> {
  return {
    aggregateType: AGG.sponsor,
    machine: sponsorMachine,
    snapshotVersion: 1,
    decide: (snapshot, command) => {
      const state = snapshot.value as string;
      if (command.type === CMD.sponsorReserve && state === "none") return [consoleEvent(EV.sponsorReserved, command.data)];
      if (command.type === CMD.sponsorExecute && state === "reserved") {
        const ctx = snapshot.context;
        // Pure: expiry is judged at the time the gateway issued the command, which comes with it.
        if (Date.parse(ctx.reservation!.expires_at) < Date.parse(command.issued_at)) return [consoleEvent(EV.sponsorExpired, { expired_at: command.issued_at })];
        return [consoleEvent(EV.sponsorExecuteRequested, { requested_at: command.data.requested_at })];
      }
      return [];
    },
    effects: {
      execute: ({ context, command }) =>
        Effect.gen(function* () {
          const r = context.reservation!;
          if (command.type !== CMD.sponsorExecute) return yield* Effect.fail(new Transient("execute effect without its command"));
          const signed = cosign(r.tx_bytes, command.data.signature, ports.sponsorKey);
          const outcome = yield* Effect.tryPromise({ try: () => ports.chain.execute(signed), catch: (e) => e }).pipe(Effect.result);
          if (outcome._tag === "Failure") {
            const e = outcome.failure;
            if (e instanceof PortError && e.kind !== "unavailable") {
              return [consoleEvent(EV.sponsorFailed, { code: e instanceof SignatureRejected ? CODE.invalidSignature : CODE.chainRejected, error: e.message, kind: e.kind })];
            }
            return yield* Effect.fail(transientOf("chain")(e));
          }
          const { digest, objects } = outcome.success;
          return [
            consoleEvent(EV.sponsorExecuted, { chain_digest: digest, kind: r.kind, bucket_ids: r.bucket_ids, objects, executed_at: ports.clog.clock.now() }),
          ];
        }),
    },
  };
}
