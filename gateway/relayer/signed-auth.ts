// Signed-header authentication of the relayer (spec/relayer.md, Authentication; DESIGN.md section 3).
// Order: header syntax, clock window, Ed25519 signature (native, on worker threads: signature-verifier.ts), then the
// nonce record and the owner lookup (in parallel, both remote). Nonces are single-use across replicas through a shared set-if-absent store.
import { createHash } from "node:crypto";
import { HttpError, type Request } from "../http.ts";
import type { ChainPort, ResolvedAccount } from "../../adapters/ports.ts";
import { InlineVerifier, type SignatureVerifier } from "./signature-verifier.ts";
import { MIN_SUPPORTED_SDK } from "./versioning.ts";
import { LEADER_ELECTION_BUDGET_MS, retryWithin } from "../../eventlog/retry-within.ts";

/** "replayed": the nonce was recorded for this very signed request before; "reused": for another request. */
export type NonceClaim = "fresh" | "replayed" | "reused";

export interface NonceStore {
  /** Records the nonce for the request `requestDigest` names. Throws when the store is unavailable. */
  claim(nonce: string, requestDigest: Uint8Array): Promise<NonceClaim>;
}

export interface Authenticated extends ResolvedAccount {
  readonly publicKeyHex: string;
  /**
   * Set when the nonce was not claimed here (`nonceInCommand`): the route must publish its one command with this as
   * its id; when the work queue reports a duplicate, the request is a replay (see `requestDigest`).
   */
  readonly commandNonce?: string;
  /**
   * The signed request's digest (message and key), on idempotent routes: a second arrival of the same signed request
   * (a client's retry after a lost answer) derives the same job ids from it (request-job-ids.ts) and is answered as the
   * first was instead of refused; a request that reuses the nonce with another body still gets `nonceReused()`.
   */
  readonly requestDigest?: Buffer;
}

/** Margin between a replay window and the command id memory before the nonce may be left to the work queue. */
const COMMAND_NONCE_MARGIN_SECS = 60;

const HEX64 = /^[0-9a-fA-F]{64}$/;
const HEX128 = /^[0-9a-fA-F]{128}$/;
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

const fail = (error: string, code: string, status = 401) => new HttpError(status, error, {}, { "x-auth-error": code });

export const nonceReused = () => fail("nonce already used", "ERR_NONCE_REUSED");

/**
 * A request signed but without x-nonce comes from a client that signs the old four-field message
 * (`{timestamp}.{method}.{path}.{body_sha256}`, e.g. @mysten-incubation/memwal 0.0.1). MemWal answers such clients 426
 * Upgrade Required so they learn to upgrade rather than retry a signature that can never verify; so do we, naming
 * the minimum versions.
 */
const upgradeRequired = () =>
  new HttpError(
    426,
    "this client signs the old request format (no x-nonce); upgrade it to a release that signs {timestamp}.{method}.{path}.{body_sha256}.{nonce}.{account_id}",
    { minSupportedSdk: MIN_SUPPORTED_SDK },
    { "x-auth-error": "ERR_UPGRADE_REQUIRED" },
  );

export function signedMessage(timestamp: string, method: string, target: string, body: Uint8Array, nonce: string, accountId: string): Buffer {
  const bodyHash = createHash("sha256").update(body).digest("hex");
  return Buffer.from(`${timestamp}.${method}.${target}.${bodyHash}.${nonce}.${accountId}`, "utf8");
}

export class SignedAuth {
  /** The work queue remembers command ids longer than a replay stays possible (2 × window), margin included. */
  private readonly queueDedupCoversReplays: boolean;

  constructor(
    private readonly chain: ChainPort,
    private readonly nonces: NonceStore,
    private readonly windowSecs: number,
    /** COMMAND_DEDUP_WINDOW_SECS of the work queue; 0: every nonce is claimed in the nonce store. */
    commandDedupSecs = 0,
    private readonly verifier: SignatureVerifier = new InlineVerifier(),
    private readonly now: () => number = () => Date.now(),
  ) {
    this.queueDedupCoversReplays = 2 * windowSecs + COMMAND_NONCE_MARGIN_SECS <= commandDedupSecs;
  }

  /**
   * `nonceInCommand`: the route publishes exactly one command; when the work queue's id memory outlasts the replay
   * window, the nonce becomes that command's id instead of a claim in the nonce store (one write less per request).
   * A nonce is then single-use among such requests and among the others, and a signature binds method, path and body,
   * so no signed request can be replayed either way.
   * `idempotent`: the route's effect is keyed by the request (its job ids derive from `requestDigest`), so a second
   * arrival of the very same signed request is let through to be answered as the first was; on every other route, and
   * for another request with a used nonce, a used nonce is refused.
   */
  async authenticate(req: Request, opts: { nonceInCommand?: boolean; idempotent?: boolean } = {}): Promise<Authenticated> {
    const h = req.headers;
    const pub = h["x-public-key"], sig = h["x-signature"], ts = h["x-timestamp"], nonce = h["x-nonce"];
    if (pub && sig && ts && !nonce) throw upgradeRequired();
    if (!pub || !sig || !ts || !nonce) throw fail("missing signed headers: x-public-key, x-signature, x-timestamp and x-nonce are required", "ERR_MISSING_HEADERS");
    if (!HEX64.test(pub)) throw fail("x-public-key must be 32 bytes of hex", "ERR_INVALID_PUBLIC_KEY");
    if (!HEX128.test(sig)) throw fail("x-signature must be 64 bytes of hex", "ERR_INVALID_SIGNATURE");
    if (!/^\d{1,12}$/.test(ts)) throw fail("x-timestamp must be Unix seconds", "ERR_INVALID_TIMESTAMP");
    if (!UUID_V4.test(nonce)) throw fail("x-nonce must be a UUID v4", "ERR_INVALID_NONCE");
    const skew = Math.abs(Math.floor(this.now() / 1000) - Number(ts));
    if (skew > this.windowSecs) throw fail(`timestamp outside the allowed window of ${this.windowSecs} s`, "ERR_TIMESTAMP_OUT_OF_BOUNDS");
    const accountId = h["x-account-id"] ?? "";
    const message = signedMessage(ts, req.method, req.target, req.body, nonce, accountId);
    const publicKeyHex = pub.toLowerCase();
    if (!(await this.verifier.verify(message, Buffer.from(publicKeyHex, "hex"), Buffer.from(sig, "hex")))) throw fail("invalid signature", "ERR_INVALID_SIGNATURE");
    const commandNonce = opts.nonceInCommand && this.queueDedupCoversReplays ? nonce.toLowerCase() : undefined;
    const requestDigest = createHash("sha256").update(message).update(publicKeyHex).digest();
    const [claim, account] = await Promise.all([
      commandNonce ? ("fresh" as const) : this.nonces.claim(nonce.toLowerCase(), requestDigest).catch(() => {
        throw new HttpError(503, "replay protection is unavailable; retry shortly", {}, { "retry-after": "1" });
      }),
      // A read: tried again while the ledger's stream elects a new leader, like the nonce claim.
      retryWithin(LEADER_ELECTION_BUDGET_MS, () => this.chain.resolveDelegate(publicKeyHex, accountId || undefined)).catch(() => {
        throw new HttpError(503, "account lookup is unavailable; retry shortly", {}, { "retry-after": "1" });
      }),
    ]);
    if (claim === "reused" || (claim === "replayed" && !opts.idempotent)) throw nonceReused();
    if (!account) throw fail("the signing key is not a delegate key of an active account", "ERR_UNKNOWN_DELEGATE_KEY");
    return {
      ...account,
      publicKeyHex,
      ...(commandNonce ? { commandNonce } : {}),
      ...(opts.idempotent ? { requestDigest } : {}),
    };
  }
}
