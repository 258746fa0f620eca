// HTTP of the local sponsorship provider (adapters/sponsor/local-provider.ts), served on the ledger's JSON-RPC listener
// like a provider beside a full node: Bearer API keys compared as BLAKE2s-256 hashes in constant time, JSON bodies,
// answers `{data}` or `{errors: [{code, message}]}` as Enoki does.
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { HttpError } from "../../schemas/http-error.ts";
import { parseProviderSponsorBody, PROVIDER_DIGEST_RE, PROVIDER_ERRORS, PROVIDER_PATHS, providerRefusal } from "../../schemas/relayer/sponsor-provider.ts";
import { SPONSOR_LIMITS } from "../../schemas/relayer/sponsor.ts";
import type { LocalSponsorProvider } from "../../adapters/sponsor/local-provider.ts";
import type { Logger } from "../../config/logger.ts";
import { BodyTooLarge, NotJson, readJson } from "../../mcp/node-body.ts";

export const hashProviderKey = (key: string) => createHash("blake2s256").update(key, "utf8").digest();

function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

function authorised(req: IncomingMessage, keyHashes: readonly Buffer[]): boolean {
  const m = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "");
  if (!m) return false;
  const presented = hashProviderKey(m[1]!);
  let ok = false;
  for (const h of keyHashes) ok = timingSafeEqual(h, presented) || ok;
  return ok;
}

async function jsonObject(req: IncomingMessage): Promise<Record<string, unknown>> {
  const body = await readJson(req, SPONSOR_LIMITS.bodyBytes).catch((err) => {
    if (err instanceof BodyTooLarge) throw providerRefusal(413, PROVIDER_ERRORS.invalidRequest, `body exceeds ${SPONSOR_LIMITS.bodyBytes} bytes`);
    throw err instanceof NotJson ? providerRefusal(400, PROVIDER_ERRORS.invalidRequest, "body is not JSON") : err;
  });
  if (!body || typeof body !== "object" || Array.isArray(body)) throw providerRefusal(400, PROVIDER_ERRORS.invalidRequest, "body must be a JSON object");
  return body as Record<string, unknown>;
}

/** A request handler for the RPC listener: true when the request was one of the provider's routes (and answered). */
export function sponsorProviderRoutes(provider: LocalSponsorProvider, opts: { keyHashes: readonly Buffer[]; logger: Logger }) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const path = new URL(req.url ?? "/", "http://provider").pathname;
    if (path !== PROVIDER_PATHS.sponsor && !path.startsWith(PROVIDER_PATHS.executePrefix)) return false;
    try {
      if (req.method !== "POST") throw providerRefusal(405, PROVIDER_ERRORS.invalidRequest, "POST only");
      if (!authorised(req, opts.keyHashes)) throw providerRefusal(401, PROVIDER_ERRORS.invalidApiKey, "missing or invalid API key");
      const body = await jsonObject(req);
      if (path === PROVIDER_PATHS.sponsor) {
        reply(res, 200, { data: await provider.sponsor(parseProviderSponsorBody(body)) });
      } else {
        const digest = decodeURIComponent(path.slice(PROVIDER_PATHS.executePrefix.length));
        if (!PROVIDER_DIGEST_RE.test(digest)) throw providerRefusal(404, PROVIDER_ERRORS.notFound, "not a transaction digest");
        if (typeof body.signature !== "string" || body.signature.length > SPONSOR_LIMITS.signatureMaxBytes * 2) throw providerRefusal(400, PROVIDER_ERRORS.invalidRequest, "signature must be a Sui signature (base64)");
        reply(res, 200, { data: await provider.execute(digest, body.signature) });
      }
    } catch (err) {
      if (err instanceof HttpError) reply(res, err.status, { errors: [{ code: err.extra.code ?? PROVIDER_ERRORS.invalidRequest, message: err.message }] });
      else {
        opts.logger.error("sponsorship provider failed", { path: path.startsWith(PROVIDER_PATHS.executePrefix) ? `${PROVIDER_PATHS.executePrefix}<digest>` : path, error: err instanceof Error ? err.message : String(err) });
        reply(res, 503, { errors: [{ code: PROVIDER_ERRORS.unavailable, message: "the sponsorship provider is temporarily unavailable" }] });
      }
    }
    return true;
  };
}
