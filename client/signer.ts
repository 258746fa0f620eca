// Ed25519 request signing exactly as spec/relayer.md, Authentication: the signed message is
// `{timestamp}.{METHOD}.{path_and_query}.{sha256_hex(body)}.{nonce}.{account_id}`.
import { createHash, createPrivateKey, createPublicKey, randomUUID, sign, type KeyObject } from "node:crypto";

const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

export class RequestSigner {
  private readonly key: KeyObject;
  readonly publicKeyHex: string;

  constructor(privateKeySeed: Uint8Array, readonly accountId = "") {
    if (privateKeySeed.length !== 32) throw new Error("an Ed25519 private key is 32 bytes");
    this.key = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, privateKeySeed]), format: "der", type: "pkcs8" });
    const spki = createPublicKey(this.key).export({ format: "der", type: "spki" });
    this.publicKeyHex = Buffer.from(spki.subarray(spki.length - 32)).toString("hex");
  }

  headers(method: string, target: string, body: Uint8Array | string = "", opts: { timestamp?: number; nonce?: string } = {}): Record<string, string> {
    const timestamp = String(opts.timestamp ?? Math.floor(Date.now() / 1000));
    const nonce = opts.nonce ?? randomUUID();
    const bodyHash = createHash("sha256").update(body).digest("hex");
    const message = `${timestamp}.${method.toUpperCase()}.${target}.${bodyHash}.${nonce}.${this.accountId}`;
    const signature = sign(null, Buffer.from(message, "utf8"), this.key).toString("hex");
    const h: Record<string, string> = { "x-public-key": this.publicKeyHex, "x-signature": signature, "x-timestamp": timestamp, "x-nonce": nonce };
    if (this.accountId) h["x-account-id"] = this.accountId;
    return h;
  }
}
