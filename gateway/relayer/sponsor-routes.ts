// `POST /sponsor` and `POST /sponsor/execute` (spec/relayer.md): public routes carrying their own signature fields.
// Every request first counts toward its client address's limit (MemWal's sponsor limit: SPONSOR_RATE_LIMIT_PER_MINUTE
// / _PER_HOUR, one bucket for both routes), valid or not, so a flood of bad requests is slowed like any other; then a
// body over MemWal's per-route limit answers 413 before its JSON is parsed. The gateway validates the body at the edge
// and forwards only the validated fields to the sidecar (SIDECAR_URL, SIDECAR_AUTH_TOKEN), which runs the gas station
// (actors/relayer/sponsorship.ts); its answer comes back as is.
import { HttpError, json, parseJsonObject, type Handler, type HttpServer, type Request } from "../http.ts";
import { clientIp, ipBucket, type PgRateLimiter } from "../rate-limit.ts";
import { SIDECAR_HEADERS } from "../../schemas/mcp-tools.ts";
import { parseSponsorExecuteRequest, parseSponsorRequest, SPONSOR_LIMITS } from "../../schemas/relayer/sponsor.ts";
import type { Logger } from "../../config/logger.ts";
import type { SidecarLink } from "./mcp-routes.ts";

const SIDECAR_TIMEOUT_MS = 60_000;

/** Requests per client address (IPv6: per /64) to both sponsor routes together; 0 disables a window. */
export interface SponsorRateLimit {
  readonly perMinute: number;
  readonly perHour: number;
}

export interface SponsorRouteOptions {
  readonly trustedProxyHops: number;
  readonly logger: Logger;
  readonly wrap: (name: string, h: Handler) => Handler;
  readonly limiter: PgRateLimiter;
  readonly rateLimit: SponsorRateLimit;
  /** RATE_LIMIT_DISABLED (benchmarks only), as MemWal's bypass covers its sponsor limit too. */
  readonly rateLimitDisabled: boolean;
}

export function registerSponsorRoutes(server: HttpServer, link: SidecarLink, opts: SponsorRouteOptions): void {
  const admit = (req: Request) => {
    if (opts.rateLimitDisabled) return Promise.resolve();
    const key = `sponsor:ip:${ipBucket(clientIp(req, opts.trustedProxyHops))}`;
    // MemWal's layer names, so a client or dashboard reading `layer` sees the same words.
    return opts.limiter.enforce([
      { layer: "sponsor_ip_burst", key, limit: opts.rateLimit.perMinute, windowMs: 60_000 },
      { layer: "sponsor_ip_sustained", key, limit: opts.rateLimit.perHour, windowMs: 3_600_000 },
    ]);
  };
  const forward = (path: string, maxBodyBytes: number, validate: (body: Record<string, unknown>) => object): Handler => async (req: Request) => {
    await admit(req);
    if (req.body.length > maxBodyBytes) throw new HttpError(413, `body exceeds the limit of ${maxBodyBytes} bytes`, { limit: maxBodyBytes });
    const body = validate(parseJsonObject(req.body));
    if (!link.token) return json(503, { error: "sponsorship is not available on this relayer (SIDECAR_AUTH_TOKEN)" });
    let upstream: Response;
    try {
      upstream = await fetch(new URL(path, link.url()), {
        method: "POST",
        headers: { "content-type": "application/json", [SIDECAR_HEADERS.token]: link.token, [SIDECAR_HEADERS.clientIp]: clientIp(req, opts.trustedProxyHops) },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(SIDECAR_TIMEOUT_MS),
      });
    } catch (err) {
      opts.logger.warn("sponsor sidecar unreachable", { error: err instanceof Error ? err.message : String(err) });
      return json(503, { error: "the sponsor service is unavailable; retry shortly" }, { "retry-after": "2" });
    }
    const answer = await upstream.json().catch(() => ({ error: "the sponsor service answered without JSON" }));
    const retryAfter = upstream.headers.get("retry-after");
    return json(upstream.status, answer, retryAfter ? { "retry-after": retryAfter } : {});
  };
  const socketCap = { bodyLimit: SPONSOR_LIMITS.bodyBytes };
  server
    .route("post", "/sponsor", opts.wrap("sponsor", forward("/sponsor", SPONSOR_LIMITS.sponsorBodyBytes, parseSponsorRequest)), socketCap)
    .route("post", "/sponsor/execute", opts.wrap("sponsor_execute", forward("/sponsor/execute", SPONSOR_LIMITS.executeBodyBytes, parseSponsorExecuteRequest)), socketCap);
}
