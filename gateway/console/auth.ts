// API keys of the console (spec/console.md, Authentication): `Authorization: Bearer mrc_<64 hex>`. Only the
// BLAKE2s-256 hash of a key is stored; the hash → key lookup is cached (an immutable fact), but the key's state is
// read from its own subject in the event log on every request, so a revocation answers at once on every replica.
import { timingSafeEqual } from "node:crypto";
import { hashApiKey } from "../../actors/console/api-keys.ts";
import type { Request } from "../http.ts";
import { AGG, EV, type KeyRole, type KeyState } from "../../schemas/console/events.ts";
import { CODE, ConsoleHttpError } from "../../schemas/console/http.ts";
import type { ConsoleLog } from "../../actors/console/log.ts";
import type { Queries } from "../../projections/console/queries.ts";
import type { KeyRow } from "../../projections/console/query-parts.ts";

const KEY_RE = /^mrc_[0-9a-f]{64}$/;

export interface Principal {
  readonly keyId: string;
  readonly userId: string;
  readonly role: KeyRole;
  /** the key's service key address (read_write keys) */
  readonly serviceAddress: string | null;
  /** the one space a restricted key reaches; null: all the user's spaces */
  readonly spaceId: string | null;
}

const CHALLENGE = { "www-authenticate": 'Bearer realm="console"' };
const unauthorized = (message: string, code: string = CODE.unauthorized) => new ConsoleHttpError(401, message, code, {}, CHALLENGE);

const STATE_OF: Record<string, KeyState> = {
  [EV.keyMinted]: "registering",
  [EV.keyActivated]: "active",
  [EV.keyRejected]: "revoked",
  [EV.keyRevokeRequested]: "revoking",
  [EV.keyRevoked]: "revoked",
};

const MAX_CACHE = 50_000;

export class ConsoleAuth {
  private readonly cache = new Map<string, KeyRow>();

  constructor(
    private readonly q: Queries,
    private readonly clog: ConsoleLog,
  ) {}

  async authenticate(req: Request): Promise<Principal> {
    return this.check(await this.identify(req));
  }

  /** The key a request names (hash lookup, cached): who it claims to be, before its state is checked. */
  async identify(req: Request): Promise<KeyRow> {
    const header = req.headers["authorization"];
    if (!header) throw unauthorized("missing API key: send Authorization: Bearer <API_KEY>");
    const m = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
    if (!m || !KEY_RE.test(m[1])) throw unauthorized("invalid API key");
    const hash = hashApiKey(m[1]);
    let row = this.cache.get(hash);
    if (!row) {
      const found = await this.q.keyByHash(hash);
      if (!found) throw unauthorized("invalid API key");
      row = found;
      if (this.cache.size >= MAX_CACHE) this.cache.clear();
      this.cache.set(hash, row);
    }
    if (!timingSafeEqual(Buffer.from(row.hash, "hex"), Buffer.from(hash, "hex"))) throw unauthorized("invalid API key");
    return row;
  }

  /** The key's current state, read from the event log (never cached): only an active key passes. */
  async check(row: KeyRow): Promise<Principal> {
    const last = await this.clog.lastEvent(AGG.key, row.key_id);
    const state = last ? STATE_OF[last.type] : undefined;
    if (state === "registering") throw unauthorized("the API key is still being registered; retry shortly", CODE.apiKeyRegistering);
    if (state === "revoking") throw unauthorized("the API key is being revoked", CODE.apiKeyRevoking);
    if (state !== "active") throw unauthorized("the API key was revoked", CODE.apiKeyRevoked);
    return { keyId: row.key_id, userId: row.user_id, role: row.role, serviceAddress: row.service_address, spaceId: row.space_id };
  }
}

export function requireWrite(p: Principal): void {
  if (p.role !== "read_write") throw new ConsoleHttpError(403, "this API key is read-only", CODE.readOnlyApiKey);
}
