// Where OAuth grants' delegate private keys live: only as ciphertext `v1.<nonce>.<ciphertext>` (AES-256-GCM under the
// operator key MCP_OAUTH_DELEGATE_ENCRYPTION_KEY, the grant id as associated data), in a JetStream KV bucket beside
// the event log (replicated like it, encrypted at rest by nats.conf) — never in an event, a table or a log line.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import type { KV } from "@nats-io/kv";
import type { EventLog } from "../../eventlog/connection.ts";

const BUCKET = "oauth_delegates";

export class DelegateVault {
  /** Short id of the operator key: a grant made under another key is invalid (a key change ends every token). */
  readonly keyId: string;

  private constructor(private readonly kv: KV, private readonly key: Uint8Array) {
    this.keyId = createHash("sha256").update(key).digest("hex").slice(0, 16);
  }

  static async open(log: EventLog, key: Uint8Array): Promise<DelegateVault> {
    return new DelegateVault(await log.kvm.create(BUCKET, { history: 1 }), key);
  }

  seal(grantId: string, secret: Uint8Array): string {
    const nonce = randomBytes(12);
    const c = createCipheriv("aes-256-gcm", this.key, nonce);
    c.setAAD(Buffer.from(grantId));
    const ct = Buffer.concat([c.update(secret), c.final(), c.getAuthTag()]);
    return `v1.${nonce.toString("base64url")}.${ct.toString("base64url")}`;
  }

  open(grantId: string, sealed: string): Uint8Array | undefined {
    const [v, n, ct] = sealed.split(".");
    if (v !== "v1" || !n || !ct) return undefined;
    try {
      const bytes = Buffer.from(ct, "base64url");
      const d = createDecipheriv("aes-256-gcm", this.key, Buffer.from(n, "base64url"));
      d.setAAD(Buffer.from(grantId));
      d.setAuthTag(bytes.subarray(bytes.length - 16));
      return new Uint8Array(Buffer.concat([d.update(bytes.subarray(0, bytes.length - 16)), d.final()]));
    } catch {
      return undefined; // another operator key, or tampered
    }
  }

  async put(grantId: string, secret: Uint8Array): Promise<void> {
    await this.kv.put(grantId, this.seal(grantId, secret));
  }

  async get(grantId: string): Promise<Uint8Array | undefined> {
    const e = await this.kv.get(grantId);
    return e?.value?.length ? this.open(grantId, e.string()) : undefined;
  }
}
