// Job pipeline gauges for `GET /metrics`: commands waiting per actor consumer, each read model's checkpoint and lag,
// the messages set aside on the DLQ stream, and the operator alerts kept on the ALERTS stream (what the deploy kit's
// low-balance and upload-failure rules watch). They are read from NATS and Postgres at scrape time, at most once per
// CACHE_MS however many gauges and scrapers ask, so a scrape stays cheap.
import type { EventLog } from "../eventlog/connection.ts";
import { STREAMS } from "../eventlog/subjects.ts";
import { deadLetterCounts } from "../eventlog/dead-letter.ts";
import type { Db } from "../db/pool.ts";
import type { ProjectionHandle } from "../projections/runtime.ts";
import type { ServiceMetrics } from "./metrics.ts";

const CACHE_MS = 1_500;

export interface PipelineSources {
  readonly log: EventLog;
  readonly db: Db;
  /** Read models of this service (their checkpoints are read from Postgres, wherever they run). */
  readonly projections: readonly string[];
  /** Runners in this process: their lag is known exactly. */
  readonly runners: () => readonly ProjectionHandle[];
  /** Durable CMD consumers of this service's actor hosts, by name prefix (e.g. `actor-job`). */
  readonly consumerPrefix?: string;
}

interface PipelineState {
  readonly pending: ReadonlyMap<string, number>;
  readonly checkpoints: ReadonlyMap<string, number>;
  readonly lag: ReadonlyMap<string, number>;
  readonly dead: ReadonlyMap<string, number>;
  readonly alerts: ReadonlyMap<string, number>;
}

/** Alerts on the ALERTS stream (kept 30 days) per kind: the subject without `alerts.`, e.g. `wallet.low_balance`. */
async function alertCounts(log: EventLog): Promise<Map<string, number>> {
  const info = await log.jsm.streams.info(STREAMS.alerts, { subjects_filter: ">" }).catch(() => undefined);
  return new Map(Object.entries(info?.state.subjects ?? {}).map(([subject, n]) => [subject.slice("alerts.".length), n]));
}

async function readState(src: PipelineSources): Promise<PipelineState> {
  const pending = new Map<string, number>();
  if (src.consumerPrefix) {
    for await (const c of await src.log.jsm.consumers.list(STREAMS.commands)) {
      if (c.name.startsWith(src.consumerPrefix)) pending.set(c.name, c.num_pending + c.num_ack_pending);
    }
  }
  const r = await src.db.query<{ name: string; seq: string }>("SELECT name, seq FROM projection_checkpoints WHERE name = ANY($1::text[])", [src.projections]);
  const checkpoints = new Map(r.rows.map((row) => [row.name, Number(row.seq)]));
  const lag = new Map<string, number>();
  for (const runner of src.runners()) if (Number.isFinite(runner.pending)) lag.set(runner.projection.name, runner.pending);
  const [dead, alerts] = await Promise.all([deadLetterCounts(src.log), alertCounts(src.log)]);
  return { pending, checkpoints, lag, dead, alerts };
}

export function registerPipelineGauges(metrics: ServiceMetrics, src: PipelineSources): void {
  let cached: { at: number; state: Promise<PipelineState> } | undefined;
  const state = () => {
    if (!cached || Date.now() - cached.at > CACHE_MS) {
      cached = { at: Date.now(), state: readState(src) };
      // A failed read is not cached: the next scrape tries again.
      cached.state.catch(() => (cached = undefined));
    }
    return cached.state;
  };
  const fill = <L extends string>(map: (s: PipelineState) => ReadonlyMap<string, number>, label: (key: string) => Record<L, string>) => async (g: import("prom-client").Gauge<L>) => {
    g.reset();
    const s = await state().catch(() => undefined);
    if (!s) return;
    for (const [k, v] of map(s)) g.set(label(k), v);
  };
  if (src.consumerPrefix) {
    metrics.gauge("commands_pending", "Commands waiting on the work queue or in progress, per actor consumer", ["consumer"], fill((s) => s.pending, (consumer) => ({ consumer })));
  }
  metrics.gauge("projection_checkpoint", "Last event-log sequence each read model applied", ["projection"], fill((s) => s.checkpoints, (projection) => ({ projection })));
  metrics.gauge("projection_lag_events", "Events a read model has not applied yet (runners in this process)", ["projection"], fill((s) => s.lag, (projection) => ({ projection })));
  metrics.gauge("dead_letters", "Messages set aside on the DLQ stream after bounded retries, per source and name", ["source", "name"], fill((s) => s.dead, (key) => {
    const i = key.indexOf(".");
    return { source: key.slice(0, i), name: key.slice(i + 1) };
  }));
  metrics.gauge("alerts_stored", "Operator alerts on the ALERTS stream (kept 30 days), per kind such as wallet.low_balance or upload.failed", ["alert"], fill((s) => s.alerts, (alert) => ({ alert })));
}
