// Wires the restore-job machine to its effect: restoreNamespace (restore-namespace.ts) with the credential the start
// command carries. The rows go to the namespace's index aggregate as `memory.restored` commits keyed by the job id,
// so a redelivered job appends nothing twice. A condition that passes (the index behind the log, an outage of the
// blob store, chain or key servers) ends the job with a 503 the gateway passes on: the caller retries, not the host,
// because the caller is waiting for the answer. A blob read that fails for a moment is first read again within the
// effect (restore-namespace.ts); only an outage outlasting that ends the job. Failing the effect as Transient would
// keep nothing more: the job records no progress of its own (its events are appended once the effect ends), the
// progress is the `memory.restored` commits already in the log, which a host retry and the caller's next restore
// both find indexed and skip alike. A host retry would only hold the caller for the length of the outage (or past
// the request's wait, leaving an unwatched job retrying), and report what its earlier attempt restored as skipped.
import { Effect } from "effect";
import type { ActorDefinition } from "../host.ts";
import { restoreJobMachine } from "./restore-job.machine.ts";
import { IndexCatchingUp, restoreNamespace, type RestorePorts } from "./restore-namespace.ts";
import { RESTORE, RESTORE_EVENTS, restoreEvent, type NewRestoreEvent, type RestoreCommand } from "../../schemas/relayer/restore-job.ts";
import type { Logger } from "../../config/logger.ts";
import { missingCredential } from "../../schemas/encryption.ts";

class MissingCredential extends Error {}

export function restoreJobActor(ports: RestorePorts, logger: Logger): ActorDefinition<RestoreCommand, typeof restoreJobMachine, NewRestoreEvent> {
  return {
    aggregateType: RESTORE,
    machine: restoreJobMachine,
    snapshotVersion: 1,
    freshOnFirstDelivery: true,
    setAside: (_command, error) => [restoreEvent(RESTORE_EVENTS.failed, { error: `set aside: ${error}`, status: 500, set_aside: true })],
    decide: (snapshot, command) => {
      if (command.type !== "restore.start" || snapshot.value !== "pending") return [];
      const d = command.data;
      return [restoreEvent(RESTORE_EVENTS.accepted, { owner: d.owner, namespace: d.namespace, limit: d.limit, include_forgotten: d.include_forgotten, scope: d.scope })];
    },
    effects: {
      restore: ({ aggregateId, command }) =>
        Effect.promise(async () => {
          const d = command.data;
          try {
            const r = await restoreNamespace(ports, {
              owner: d.owner,
              namespace: d.namespace,
              limit: d.limit,
              includeForgotten: d.include_forgotten,
              credential: () => {
                if (!d.credential) throw new MissingCredential();
                return d.credential;
              },
              candidateCap: d.candidate_cap,
              scope: d.scope,
              restoreId: aggregateId,
              correlationId: command.correlation_id,
            });
            return [restoreEvent(RESTORE_EVENTS.completed, r)];
          } catch (err) {
            if (err instanceof MissingCredential) return [restoreEvent(RESTORE_EVENTS.failed, { error: missingCredential("restore needs a decrypt credential to re-embed missing memories"), status: 400 })];
            if (err instanceof IndexCatchingUp) return [restoreEvent(RESTORE_EVENTS.failed, { error: err.message, status: 503, retry_after_secs: 2 })];
            // The message may name a backing service; it never holds the credential (that stays in this scope).
            logger.warn("restore job failed", { job: aggregateId, error: err instanceof Error ? err.message : String(err) });
            return [restoreEvent(RESTORE_EVENTS.failed, { error: "a backing service did not answer during the restore; retry shortly", status: 503, retry_after_secs: 5 })];
          }
        }),
    },
  };
}
