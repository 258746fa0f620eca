// Keys of the keyed lexical index (DESIGN.md section 6). One server secret (MEMRELAY_LEXICAL_KEY) and, from it, one
// key per owner by HKDF-SHA256 (info = the owner's address), so the term hashes of two owners never match: the index
// cannot link a word of one owner to the same word of another, and one owner's hashes say nothing about another's.
//
// Who can read what: the event log and the Postgres tables hold only keyed hashes, so a copy of them (a backup, a
// replica, the read models) does not show a word. Whoever holds the server secret can hash a dictionary under an
// owner's key and so recognise that owner's words (the usual leak of a server-side keyed index): keep the secret
// with the relayer's other secrets (wallet keys), never beside the data. Rotating it means rebuilding the index:
// replay makes no new hashes (events carry them), so a rotation needs a restore (re-embedding) per owner.
import { createHmac, hkdfSync, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/** Version of the hashing scheme, carried by every event so a change of scheme is detectable. */
export const LEXICAL_SCHEME = 1;
const SALT = Buffer.from("memrelay/lexical/v1");
const MIN_SECRET_BYTES = 32;

/** Parses MEMRELAY_LEXICAL_KEY: 64+ hex characters, or base64/base64url of 32+ bytes. */
export function parseLexicalSecret(raw: string): Uint8Array {
  const s = raw.trim();
  let bytes: Buffer;
  if (/^[0-9a-fA-F]+$/.test(s) && s.length % 2 === 0) bytes = Buffer.from(s, "hex");
  else if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(s)) bytes = Buffer.from(s.replace(/-/g, "+").replace(/_/g, "/"), "base64");
  else throw new Error("MEMRELAY_LEXICAL_KEY must be hex or base64");
  if (bytes.length < MIN_SECRET_BYTES) throw new Error(`MEMRELAY_LEXICAL_KEY must hold at least ${MIN_SECRET_BYTES} bytes (64 hex characters)`);
  return new Uint8Array(bytes);
}

/**
 * The secret from `configured` (MEMRELAY_LEXICAL_KEY) or, when unset, from `file` — generated there (mode 0600) on
 * first use. `memrelay start` and the tests use the data directory's `lexical.key`; replicas of a deployment must all
 * be given the same MEMRELAY_LEXICAL_KEY (a gateway with another key finds no lexical match, silently).
 */
export function resolveLexicalSecret(configured: string | undefined, file: string): { secret: Uint8Array; source: "env" | "file" | "generated" } {
  if (configured) return { secret: parseLexicalSecret(configured), source: "env" };
  if (existsSync(file)) {
    chmodSync(file, 0o600);
    return { secret: parseLexicalSecret(readFileSync(file, "utf8")), source: "file" };
  }
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const secret = randomBytes(32);
  writeFileSync(file, secret.toString("hex") + "\n", { mode: 0o600, flag: "wx" });
  return { secret: new Uint8Array(secret), source: "generated" };
}

/** Term hashes are the first 48 bits of HMAC-SHA256(owner key, token): exact JSON numbers, bigint in Postgres. */
const HASH_BYTES = 6;

export class OwnerLexicalKey {
  constructor(private readonly key: Buffer) {}

  /** Keyed hash of one token (a positive safe integer). */
  hash(token: string): number {
    return createHmac("sha256", this.key).update(token, "utf8").digest().readUIntBE(0, HASH_BYTES);
  }
}

/** Per-owner keys derived from the server secret, cached (HKDF once per owner). */
export class LexicalKeyring {
  private readonly cache = new Map<string, OwnerLexicalKey>();

  constructor(private readonly secret: Uint8Array, private readonly maxCached = 10_000) {
    if (secret.length < MIN_SECRET_BYTES) throw new Error(`the lexical secret must hold at least ${MIN_SECRET_BYTES} bytes`);
  }

  static generate(): LexicalKeyring {
    return new LexicalKeyring(new Uint8Array(randomBytes(32)));
  }

  forOwner(owner: string): OwnerLexicalKey {
    const id = owner.toLowerCase();
    let k = this.cache.get(id);
    if (!k) {
      k = new OwnerLexicalKey(Buffer.from(hkdfSync("sha256", this.secret, SALT, Buffer.from(`owner:${id}`, "utf8"), 32)));
      if (this.cache.size >= this.maxCached) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(id, k);
    }
    return k;
  }
}
