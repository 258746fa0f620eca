// `/metrics` families of the read pool (db/read-pool.ts): each replica's health and lag as the last check saw them,
// and which pool served the reads, with why.
import type { ReadPool } from "../db/read-pool.ts";
import type { ServiceMetrics } from "./metrics.ts";

export function registerReadPoolMetrics(metrics: ServiceMetrics, reads: ReadPool): void {
  const served = metrics.counter("db_reads_total", "Reads of recall, ask, stats and job lookups, by the pool that served them (primary or a replica's host:port/database) and why", ["pool", "reason"]);
  reads.onRead((pool, reason) => served.labels(pool, reason).inc());
  metrics.gauge("db_replica_up", "1 while a DATABASE_READ_URLS replica answers its health checks as a standby, else 0", ["replica"], (g) => {
    for (const r of reads.health()) g.labels(r.name).set(r.up ? 1 : 0);
  });
  metrics.gauge("db_replica_lag_seconds", "Seconds a replica's replay trails the primary's WAL (at least; from positions sampled every check)", ["replica"], (g) => {
    for (const r of reads.health()) if (r.lagSeconds !== undefined) g.labels(r.name).set(r.lagSeconds);
  });
  metrics.gauge("db_replica_lag_bytes", "Bytes of WAL a replica has not replayed yet", ["replica"], (g) => {
    for (const r of reads.health()) if (r.lagBytes !== undefined) g.labels(r.name).set(r.lagBytes);
  });
}
