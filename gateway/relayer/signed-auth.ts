// Signed-header authentication of the relayer (spec/relayer.md, Authentication; DESIGN.md section 3).
// Order: header syntax, clock window, Ed25519 signature (native), then the nonce record and the owner lookup
// (in parallel, both remote). Nonces are single-use across replicas through a shared set-if-absent store.
import { createHash, createPublicKey, verify, type KeyObject } from "node:crypto";
import { HttpError, type Request } from "../http.ts";
import type { ChainPort, ResolvedAccount } from "../../adapters/ports.ts";

export interface NonceStore {
  /** Records the nonce; false when it was already recorded. Throws when the store is unavailable. */
  claim(key: string): Promise<boolean>;
}

export interface Authenticated extends ResolvedAccount {
  readonly publicKeyHex: string;
}

const HEX64 = /^[0-9a-fA-F]{64}$/;
const HEX128 = /^[0-9a-fA-F]{128}$/;
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
const SPKI_ED25519_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

const fail = (error: string, code: string, status = 401) => new HttpError(status, error, {}, { "x-auth-error": code });

export function signedMessage(timestamp: string, method: string, target: string, body: Uint8Array, nonce: string, accountId: string): Buffer {
  const bodyHash = createHash("sha256").update(body).digest("hex");
  return Buffer.from(`${timestamp}.${method}.${target}.${bodyHash}.${nonce}.${accountId}`, "utf8");
}

export class SignedAuth {
  private readonly keys = new Map<string, KeyObject>();

  constructor(
    private readonly chain: ChainPort,
    private readonly nonces: NonceStore,
    private readonly windowSecs: number,
    private readonly now: () => number = () => Date.now(),
  ) {}

  private keyObject(hex: string): KeyObject {
    let k = this.keys.get(hex);
    if (!k) {
      k = createPublicKey({ key: Buffer.concat([SPKI_ED25519_PREFIX, Buffer.from(hex, "hex")]), format: "der", type: "spki" });
      if (this.keys.size > 10_000) this.keys.clear();
      this.keys.set(hex, k);
    }
    return k;
  }

  async authenticate(req: Request): Promise<Authenticated> {
    const h = req.headers;
    const pub = h["x-public-key"], sig = h["x-signature"], ts = h["x-timestamp"], nonce = h["x-nonce"];
    if (!pub || !sig || !ts || !nonce) throw fail("missing signed headers: x-public-key, x-signature, x-timestamp and x-nonce are required", "ERR_MISSING_HEADERS");
    if (!HEX64.test(pub)) throw fail("x-public-key must be 32 bytes of hex", "ERR_INVALID_PUBLIC_KEY");
    if (!HEX128.test(sig)) throw fail("x-signature must be 64 bytes of hex", "ERR_INVALID_SIGNATURE");
    if (!/^\d{1,12}$/.test(ts)) throw fail("x-timestamp must be Unix seconds", "ERR_INVALID_TIMESTAMP");
    if (!UUID_V4.test(nonce)) throw fail("x-nonce must be a UUID v4", "ERR_INVALID_NONCE");
    const skew = Math.abs(Math.floor(this.now() / 1000) - Number(ts));
    if (skew > this.windowSecs) throw fail(`timestamp outside the allowed window of ${this.windowSecs} s`, "ERR_TIMESTAMP_OUT_OF_BOUNDS");
    const accountId = h["x-account-id"] ?? "";
    const message = signedMessage(ts, req.method, req.target, req.body, nonce, accountId);
    let valid = false;
    try {
      valid = verify(null, message, this.keyObject(pub.toLowerCase()), Buffer.from(sig, "hex"));
    } catch {
      valid = false;
    }
    if (!valid) throw fail("invalid signature", "ERR_INVALID_SIGNATURE");
    const publicKeyHex = pub.toLowerCase();
    const [fresh, account] = await Promise.all([
      this.nonces.claim(nonce.toLowerCase()).catch(() => {
        throw new HttpError(503, "replay protection is unavailable; retry shortly", {}, { "retry-after": "1" });
      }),
      this.chain.resolveDelegate(publicKeyHex, accountId || undefined).catch(() => {
        throw new HttpError(503, "account lookup is unavailable; retry shortly", {}, { "retry-after": "1" });
      }),
    ]);
    if (!fresh) throw fail("nonce already used", "ERR_NONCE_REUSED");
    if (!account) throw fail("the signing key is not a delegate key of an active account", "ERR_UNKNOWN_DELEGATE_KEY");
    return { ...account, publicKeyHex };
  }
}
