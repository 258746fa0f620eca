// The blob store's infrastructure routes (./service.ts): liveness, readiness, metrics and the OpenAPI document of
// every route.
import type { EventLog } from "../../eventlog/connection.ts";
import type { Db } from "../../db/pool.ts";
import { withTimeout } from "../../config/time-bounds.ts";
import { json } from "../http.ts";
import type { ServiceMetrics } from "../metrics.ts";
import type { ProjectionRunner } from "../../projections/runtime.ts";
import type { BlobBackend } from "../../adapters/blob-bytes/backend.ts";
import { BLOBSTORE_KINDS } from "../../projections/blobstore/read-models.ts";
import type { Kind } from "../../schemas/blobstore/events.ts";
import { buildOpenApi, type RouteDoc } from "./openapi.ts";
import type { BlobstoreRouteKit } from "./route-kit.ts";

const BLOBSTORE_VERSION = "1.0.0";
/** A dependency that has not answered the readiness probe by then is down: a probe must answer while the prober waits. */
const READY_CHECK_MS = 1_500;

export interface InfrastructureDeps {
  readonly route: BlobstoreRouteKit["route"];
  /** Every route documented so far (read when the document is first asked for). */
  readonly docs: readonly RouteDoc[];
  readonly backend: BlobBackend;
  readonly eventLog: EventLog;
  readonly db: Db;
  /** False while the event log's connection is down. */
  readonly natsUp: () => boolean;
  readonly metrics: ServiceMetrics;
  readonly runProjections: boolean;
  /** This process's projection runners (replaced on replay). */
  readonly runners: Readonly<Record<Kind, ProjectionRunner>>;
}

export function registerInfrastructureRoutes({ route, docs, backend, eventLog, db, natsUp, metrics, runProjections, runners }: InfrastructureDeps): void {
  route(
    { method: "get", path: "/health", summary: "Liveness", tag: "Infrastructure", auth: "public", responses: { 200: { description: "alive", schema: { type: "object" } } } },
    "/health",
    () => json(200, { status: "ok", service: "blobstore", version: BLOBSTORE_VERSION, backend: backend.name }),
  );

  route(
    {
      method: "get",
      path: "/ready",
      summary: "Readiness: 200 only when NATS JetStream and Postgres answer",
      tag: "Infrastructure",
      auth: "public",
      responses: { 200: { description: "ready", schema: { type: "object" } }, 503: { description: "a dependency is down" } },
    },
    "/ready",
    async () => {
      const nats = natsUp() && !eventLog.nc.isClosed() && (await withTimeout(READY_CHECK_MS, eventLog.jsm.getAccountInfo()).then(() => true, () => false));
      const postgres = await withTimeout(READY_CHECK_MS, db.query("SELECT 1")).then(() => true, () => false);
      const projections = runProjections ? Object.fromEntries(BLOBSTORE_KINDS.map((k) => [runners[k].projection.name, { checkpoint: runners[k].checkpoint }])) : "run elsewhere";
      const ready = nats && postgres;
      return json(ready ? 200 : 503, { ready, checks: { nats: nats ? "ok" : "down", postgres: postgres ? "ok" : "down" }, projections, ...(ready ? {} : { error: "dependencies unavailable" }) });
    },
  );

  route(
    { method: "get", path: "/metrics", summary: "Prometheus metrics", tag: "Infrastructure", auth: "public", responses: { 200: { description: "text exposition", schema: "Metrics" } } },
    "/metrics",
    () => metrics.reply(),
  );

  let openapi: string | undefined;
  route(
    { method: "get", path: "/api/docs", summary: "This OpenAPI 3 document", tag: "Infrastructure", auth: "public", responses: { 200: { description: "OpenAPI JSON", schema: { type: "object" } } } },
    "/api/docs",
    () => ({ status: 200, headers: { "content-type": "application/json" }, body: (openapi ??= JSON.stringify(buildOpenApi(docs, { version: BLOBSTORE_VERSION }))) }),
  );
}
