// Bearer authentication of the blob store. The route class selects the table: admin routes look the token up as an
// admin key, data routes as an API key, so a key of the other class is simply unknown there (401).
//
// Revocation is never cached: after the hash lookup (hash -> key id is an immutable fact, safe to cache), the key's
// current state is read from its own subject in the event log on every request. A revoke is final the moment its
// event is appended, whatever the read models' lag, on every replica, and during a replay.
import type { Request } from "../http.ts";
import { HttpError } from "../http.ts";
import type { ServiceMetrics } from "../metrics.ts";
import type { Counter } from "prom-client";
import type { Logger } from "../../config/logger.ts";
import { KIND } from "../../schemas/blobstore/events.ts";
import { KEY } from "../../actors/blobstore/deciders.ts";
import { hashSecret, hashesEqual, parseBearer } from "../../actors/blobstore/keys.ts";
import type { BlobstoreLog } from "../../actors/blobstore/log.ts";
import type { Queries } from "../../projections/blobstore/queries.ts";

export interface AppPrincipal {
  readonly appId: string;
  readonly keyId: string;
}

export interface AccountPrincipal {
  readonly appId: string;
  readonly accountId: string;
  readonly keyId: string;
}

type Cls = "admin" | "api";
const LABEL: Record<Cls, string> = { admin: "admin key", api: "API key" };
const CHALLENGE = { "www-authenticate": 'Bearer realm="blobstore"' };

const MAX_CACHE = 50_000;
/** Last-used times are written at most this often per key and process. */
const TOUCH_EVERY_MS = 1_000;

export class Authenticator {
  private readonly ids = new Map<string, { key_id: string; app_id: string; account_id: string | null }>();
  private readonly touched = new Map<string, number>();

  constructor(
    private readonly q: Queries,
    private readonly log: BlobstoreLog,
    metrics: ServiceMetrics,
    private readonly logger: Logger,
  ) {
    this.failures = metrics.counter("auth_failures_total", "Refused credentials, by key class and reason", ["class", "reason"]);
  }
  private readonly failures: Counter<"class" | "reason">;

  async admin(req: Request): Promise<AppPrincipal> {
    const k = await this.check(req, "admin");
    return { appId: k.app_id, keyId: k.key_id };
  }

  async account(req: Request): Promise<AccountPrincipal> {
    const k = await this.check(req, "api");
    return { appId: k.app_id, accountId: k.account_id!, keyId: k.key_id };
  }

  private fail(cls: Cls, reason: string, message: string): never {
    this.failures.inc({ class: cls, reason });
    throw new HttpError(401, message, {}, CHALLENGE);
  }

  private async check(req: Request, cls: Cls) {
    const bearer = parseBearer(req.headers["authorization"]);
    if (!bearer.ok) {
      if (bearer.reason === "missing") this.fail(cls, "missing", `missing ${LABEL[cls]}: send Authorization: Bearer <64 hex characters>`);
      this.fail(cls, "malformed", `malformed ${LABEL[cls]}: expected Authorization: Bearer <64 hex characters>`);
    }
    const hash = hashSecret(bearer.secret);
    const cacheKey = cls + hash;
    let rec = this.ids.get(cacheKey);
    if (!rec) {
      const found = await this.q.keyByHash(hash, cls);
      if (!found) this.fail(cls, "unknown", `unknown or revoked ${LABEL[cls]}`);
      rec = found;
      if (this.ids.size >= MAX_CACHE) this.ids.clear();
      this.ids.set(cacheKey, rec);
    }
    const state = await this.log.state(KIND.key, rec.key_id, KEY);
    if (!state || state.kind !== cls || !hashesEqual(state.hash, hash)) this.fail(cls, "unknown", `unknown or revoked ${LABEL[cls]}`);
    if (state.revoked_at) this.fail(cls, "revoked", `unknown or revoked ${LABEL[cls]}`);
    await this.touch(state.key_id);
    return state;
  }

  /** Records the last-used time (shown in key listings, for the rotation procedure), at most once a second. */
  private async touch(keyId: string): Promise<void> {
    const now = Date.now();
    if (now - (this.touched.get(keyId) ?? 0) < TOUCH_EVERY_MS) return;
    this.touched.set(keyId, now);
    if (this.touched.size > MAX_CACHE) this.touched.clear();
    await this.q.touchKey(keyId).catch((err) => this.logger.warn("could not record key use", { key_id: keyId, error: (err as Error).message }));
  }
}
