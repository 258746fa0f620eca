// The sidecar's sponsorship routes, behind the relayer's `/sponsor` and `/sponsor/execute` (which validate the bodies
// and forward them with SIDECAR_AUTH_TOKEN): JSON in, JSON out, `{error}` with the status of every refusal.
import type { IncomingMessage, ServerResponse } from "node:http";
import { HttpError } from "../../schemas/http-error.ts";
import { parseSponsorExecuteRequest, parseSponsorRequest, SPONSOR_LIMITS } from "../../schemas/relayer/sponsor.ts";
import type { Sponsorship } from "../../actors/relayer/sponsorship.ts";
import { SponsorRefusal } from "../../actors/relayer/sponsor-refusals.ts";
import { sponsorHttpError } from "../../gateway/relayer/sponsor-refusals.ts";
import type { Logger } from "../../config/logger.ts";
import { BodyTooLarge, NotJson, readJson } from "../node-body.ts";

export const SPONSOR_PATHS = ["/sponsor", "/sponsor/execute"] as const;

function reply(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}

async function jsonObject(req: IncomingMessage): Promise<Record<string, unknown>> {
  const body = await readJson(req, SPONSOR_LIMITS.bodyBytes).catch((err) => {
    if (err instanceof BodyTooLarge) throw new HttpError(413, `body exceeds ${SPONSOR_LIMITS.bodyBytes} bytes`);
    throw err instanceof NotJson ? new HttpError(400, "body is not JSON") : err;
  });
  if (!body || typeof body !== "object" || Array.isArray(body)) throw new HttpError(400, "body must be a JSON object");
  return body as Record<string, unknown>;
}

export async function handleSponsorRoute(req: IncomingMessage, res: ServerResponse, path: string, sponsorship: Sponsorship | undefined, logger: Logger): Promise<void> {
  try {
    if (!sponsorship) throw new HttpError(503, "sponsorship is not configured on this deployment (SPONSOR_API_KEY or SPONSOR_PRIVATE_KEY)");
    const body = await jsonObject(req);
    const result = path === "/sponsor" ? await sponsorship.sponsor(parseSponsorRequest(body)) : await sponsorship.execute(parseSponsorExecuteRequest(body));
    reply(res, 200, result);
  } catch (caught) {
    const err = caught instanceof SponsorRefusal ? sponsorHttpError(caught.error) : caught;
    if (err instanceof HttpError) return reply(res, err.status, { error: err.message, ...err.extra }, err.headers);
    logger.error("sponsorship failed", { path, error: err instanceof Error ? err.message : String(err) });
    reply(res, 503, { error: "sponsorship is temporarily unavailable" }, { "retry-after": "5" });
  }
}
