// `POST /sponsor` and `POST /sponsor/execute` (spec/relayer.md): public routes carrying their own signature fields.
// The gateway validates the body at the edge and forwards only the validated fields to the sidecar (SIDECAR_URL,
// SIDECAR_AUTH_TOKEN), which runs the gas station (actors/relayer/sponsorship.ts); its answer comes back as is.
import { json, parseJsonObject, type Handler, type HttpServer, type Request } from "../http.ts";
import { clientIp } from "../rate-limit.ts";
import { SIDECAR_HEADERS } from "../../schemas/mcp-tools.ts";
import { parseSponsorExecuteRequest, parseSponsorRequest, SPONSOR_LIMITS } from "../../schemas/relayer/sponsor.ts";
import type { Logger } from "../../config/logger.ts";
import type { SidecarLink } from "./mcp-routes.ts";

const SIDECAR_TIMEOUT_MS = 60_000;

export function registerSponsorRoutes(server: HttpServer, link: SidecarLink, opts: { trustedProxyHops: number; logger: Logger; wrap: (name: string, h: Handler) => Handler }): void {
  const forward = (path: string, validate: (body: Record<string, unknown>) => object): Handler => async (req: Request) => {
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
  const limit = { bodyLimit: SPONSOR_LIMITS.bodyBytes };
  server
    .route("post", "/sponsor", opts.wrap("sponsor", forward("/sponsor", parseSponsorRequest)), limit)
    .route("post", "/sponsor/execute", opts.wrap("sponsor_execute", forward("/sponsor/execute", parseSponsorExecuteRequest)), limit);
}
