// EncryptionPort by envelope encryption over Seal (DESIGN.md sections 4 and 5).
//
// One Seal threshold encryption costs a few pairings (~0.2 s on this machine) and one Seal decryption several more,
// so neither can run per memory. Instead:
//   - encrypt: one random 256-bit data key per (owner, namespace, key epoch), Seal-encrypted ONCE with the
//     unmodified SDK (t-of-n) under the identity `owner (32 bytes) ‖ key id (16 random bytes)`; every memory is
//     AES-256-GCM under that data key. Plaintext data keys live only in this process's memory; a restart mints a
//     new epoch (never persisted).
//   - each memory blob is self-contained: it carries the Seal-encrypted data key, so a blob alone (e.g. on
//     restore, after the event log is gone) can be opened with a session.
//   - decryptMany: import the client's exported SessionKey (or build a short one from the legacy delegate key),
//     fetch each distinct data key once through SealClient (one fetch_key round for all of them, t-of-n), and keep
//     the unlocked data keys keyed by (session fingerprint, key id) only until that session expires.
//
// Blob layout (version 1):
//   0      2  magic "MR"
//   2      1  version = 1
//   3      1  flags = 0
//   4     32  owner address
//   36    16  key id
//   52     2  length L of the sealed data key (u16 BE)
//   54     L  Seal EncryptedObject (BCS) of the data key, identity owner ‖ key id
//   54+L  12  AES-GCM nonce
//   66+L   …  AES-256-GCM ciphertext ‖ 16-byte tag; AAD = bytes [0, 54+L)

import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import {
  EncryptedObject,
  ExpiredSessionKeyError,
  InvalidMVRNameError,
  InvalidPackageError,
  InvalidPersonalMessageSignatureError,
  InvalidSessionKeySignatureError,
  InvalidUserSignatureError,
  NoAccessError,
  SealClient,
  SessionKey,
  UnsupportedPackageIdError,
  InvalidThresholdError,
  InvalidClientOptionsError,
  type KeyServerConfig,
  type SealCompatibleClient,
} from "@mysten/seal";
import { Transaction } from "@mysten/sui/transactions";
import { isValidSuiAddress, normalizeSuiAddress } from "@mysten/sui/utils";
import { PortError, type DecryptCredential, type EncryptionPort } from "../ports.ts";
import { decodeSessionHeader, delegateKeypair, suiClientFor } from "./session.ts";

export const ENVELOPE_VERSION = 1;
const MAGIC0 = 0x4d; // "M"
const MAGIC1 = 0x52; // "R"
const KEY_ID_LEN = 16;
const NONCE_LEN = 12;
const TAG_LEN = 16;
const FIXED = 54;
/** Seal-level AAD of every sealed data key: ties the Seal object to its use here. */
const DATA_KEY_AAD = new TextEncoder().encode("memrelay/envelope/data-key/v1");
const PORT = "encryption";
/** Key-server error codes that mean "this credential may not have these keys". */
const REFUSALS = new Set(["NoAccess", "InvalidSignature", "InvalidSessionSignature", "InvalidCertificate", "InvalidPackage", "UnsupportedPackageId", "InvalidMVRName"]);

export interface EnvelopeHeader {
  readonly version: number;
  /** Normalized owner address. */
  readonly owner: string;
  readonly keyId: Uint8Array;
  /** Hex of the Seal inner identity owner ‖ key id (without the package prefix). */
  readonly identity: string;
  readonly sealedKey: Uint8Array;
  readonly nonce: Uint8Array;
  /** Ciphertext followed by the GCM tag. */
  readonly ciphertext: Uint8Array;
  /** The authenticated header bytes [0, 54+L). */
  readonly aad: Uint8Array;
}

/** Splits a memory blob into its parts; throws on anything malformed. */
export function parseEnvelope(bytes: Uint8Array): EnvelopeHeader {
  if (bytes.length < FIXED + NONCE_LEN + TAG_LEN) throw new Error("envelope too short");
  if (bytes[0] !== MAGIC0 || bytes[1] !== MAGIC1) throw new Error("not a memrelay envelope");
  if (bytes[2] !== ENVELOPE_VERSION) throw new Error(`unsupported envelope version ${bytes[2]}`);
  if (bytes[3] !== 0) throw new Error("unsupported envelope flags");
  const ownerBytes = bytes.subarray(4, 36);
  const keyId = bytes.subarray(36, 36 + KEY_ID_LEN);
  const len = (bytes[52]! << 8) | bytes[53]!;
  const headerEnd = FIXED + len;
  if (len === 0 || bytes.length < headerEnd + NONCE_LEN + TAG_LEN) throw new Error("envelope truncated");
  return {
    version: bytes[2]!,
    owner: normalizeSuiAddress(Buffer.from(ownerBytes).toString("hex")),
    keyId,
    identity: Buffer.from(bytes.subarray(4, 36 + KEY_ID_LEN)).toString("hex"),
    sealedKey: bytes.subarray(FIXED, headerEnd),
    nonce: bytes.subarray(headerEnd, headerEnd + NONCE_LEN),
    ciphertext: bytes.subarray(headerEnd + NONCE_LEN),
    aad: bytes.subarray(0, headerEnd),
  };
}

function buildHeader(owner: string, keyId: Uint8Array, sealed: Uint8Array): Uint8Array {
  if (sealed.length > 0xffff) throw new Error("sealed data key too large");
  const h = new Uint8Array(FIXED + sealed.length);
  h[0] = MAGIC0;
  h[1] = MAGIC1;
  h[2] = ENVELOPE_VERSION;
  h[3] = 0;
  h.set(Buffer.from(owner.slice(2), "hex"), 4);
  h.set(keyId, 36);
  h[52] = sealed.length >> 8;
  h[53] = sealed.length & 0xff;
  h.set(sealed, FIXED);
  return h;
}

export interface EnvelopeEncryptionOptions {
  /** The memory package whose seal_approve the key servers evaluate (identities live under it). */
  readonly packageId: string;
  /** CHAIN_RPC_URL: a Sui JSON-RPC endpoint (the local chain's, or a full node). Or pass `suiClient`. */
  readonly rpcUrl?: string;
  readonly suiClient?: SealCompatibleClient;
  readonly serverConfigs: readonly KeyServerConfig[];
  /** ENCRYPTION_THRESHOLD: key-server weight needed to decrypt. */
  readonly threshold: number;
  /** Verify key servers' proofs of possession before encrypting to them (default true). */
  readonly verifyKeyServers?: boolean;
  /** Key-server request timeout (default 10 s). */
  readonly timeoutMs?: number;
  /** Module and function of the approve call (default account::seal_approve). */
  readonly approveModule?: string;
  readonly approveFunction?: string;
  /**
   * Extra object arguments of the approve call after the identity, per owner (e.g. MemWal's on-chain contract
   * wants `seal_approve(id, &account)`; pass the owner's account object id). Default none: the local key servers
   * evaluate the owner-bound policy themselves. With objects, the PTB is resolved through the Sui client.
   */
  readonly approveObjects?: (owner: string) => Promise<readonly string[]>;
  /** TTL of sessions built from a legacy x-delegate-key (default 2 minutes). */
  readonly legacySessionTtlMin?: number;
  /** Memories per data key before a new key epoch is minted (default 2^24, far below GCM's random-nonce bound). */
  readonly maxUsesPerDataKey?: number;
  /** Cached (owner, namespace) data keys on the encrypt side (default 10,000; eviction only starts a new epoch). */
  readonly maxDataKeys?: number;
  /** Cached decrypt sessions (default 1,000). */
  readonly maxSessions?: number;
  /**
   * How long an unlocked data key is reused within its session before the key servers are asked again (default
   * 60 s; never beyond the session's expiry). Bounds how long a delegate removed on chain keeps reading through a
   * session it created before the removal.
   */
  readonly keyCacheMaxAgeMs?: number;
  /** Custom fetch for key-server calls. */
  readonly fetch?: typeof fetch;
}

interface DataKey {
  readonly key: Buffer;
  readonly header: Uint8Array;
  uses: number;
}

interface SessionEntry {
  readonly fingerprint: string;
  readonly session: SessionKey;
  /** Replaced when older than the key cache age: SealClient keeps fetched keys, so a fresh one re-asks the servers. */
  client: SealClient;
  clientAt: number;
  readonly newClient: () => SealClient;
  readonly expiresAt: number;
  /** ref (identity ‖ sealed-key hash) → unlocked data key and when; lives at most as long as the entry. */
  readonly keys: Map<string, { readonly key: Buffer; readonly at: number }>;
  /** ref → in-flight unlock. */
  readonly pending: Map<string, Promise<Buffer | null>>;
  /** Key-server answers that refused this session (authorization errors), counted by the client's fetch. */
  refusals: number;
  timer?: NodeJS.Timeout;
}

interface Item {
  readonly index: number;
  readonly env: EnvelopeHeader;
  /**
   * Cache key of the data key: identity plus a hash of the sealed bytes. Blobs of one key epoch share the same
   * sealed object; a blob carrying another sealed object under the same identity (anyone can Seal-encrypt to an
   * identity) gets its own entry instead of poisoning the legitimate one.
   */
  readonly ref: string;
}

function mapSealError(e: unknown, what: string): PortError {
  if (e instanceof PortError) return e;
  if (
    e instanceof NoAccessError ||
    e instanceof ExpiredSessionKeyError ||
    e instanceof InvalidUserSignatureError ||
    e instanceof InvalidSessionKeySignatureError ||
    e instanceof InvalidPersonalMessageSignatureError ||
    e instanceof InvalidPackageError ||
    e instanceof UnsupportedPackageIdError ||
    e instanceof InvalidMVRNameError
  ) {
    return new PortError(PORT, "forbidden", `${what}: key servers refused (${e.constructor.name})`);
  }
  return new PortError(PORT, "unavailable", `${what}: ${e instanceof Error ? e.constructor.name : "error"}`);
}

function sessionExpiry(creationTimeMs: number, ttlMin: number): number {
  // The SDK treats a session as expired 10 s before its nominal end; so do we.
  return creationTimeMs + ttlMin * 60_000 - 10_000;
}

export class EnvelopeEncryption implements EncryptionPort {
  readonly packageId: string;
  readonly #sui: SealCompatibleClient;
  readonly #opts: EnvelopeEncryptionOptions;
  readonly #totalWeight: number;
  readonly #target: string;
  readonly #keyMaxAge: number;
  #encryptClient: SealClient | undefined;
  #closed = false;
  readonly #dataKeys = new Map<string, DataKey>();
  readonly #minting = new Map<string, Promise<DataKey>>();
  readonly #sessions = new Map<string, SessionEntry>();
  readonly #opening = new Map<string, Promise<SessionEntry>>();

  constructor(opts: EnvelopeEncryptionOptions) {
    if (!isValidSuiAddress(normalizeSuiAddress(opts.packageId))) throw new Error("packageId must be an object id");
    if (opts.serverConfigs.length === 0) throw new Error("at least one key server is required");
    this.packageId = normalizeSuiAddress(opts.packageId);
    this.#opts = opts;
    this.#totalWeight = opts.serverConfigs.reduce((n, s) => n + s.weight, 0);
    if (!Number.isInteger(opts.threshold) || opts.threshold < 1 || opts.threshold > this.#totalWeight) {
      throw new Error(`threshold must be in 1..${this.#totalWeight}`);
    }
    const sui = opts.suiClient ?? (opts.rpcUrl ? suiClientFor(opts.rpcUrl) : undefined);
    if (!sui) throw new Error("rpcUrl or suiClient required");
    this.#sui = sui;
    this.#keyMaxAge = opts.keyCacheMaxAgeMs ?? 60_000;
    this.#target = `${this.packageId}::${opts.approveModule ?? "account"}::${opts.approveFunction ?? "seal_approve"}`;
  }

  #newSealClient(verify: boolean, onRefusal?: () => void): SealClient {
    const base = this.#opts.fetch ?? globalThis.fetch;
    // With one server down and one refusing, the SDK may report the outage as the "majority" error; counting
    // authorization refusals on the wire lets a refused credential surface as forbidden, not unavailable.
    const fetchFn: typeof fetch | undefined = onRefusal
      ? async (input, init) => {
          const r = await base(input, init);
          if (r.status === 403) {
            try {
              const code = ((await r.clone().json()) as { error?: unknown }).error;
              if (typeof code === "string" && REFUSALS.has(code)) onRefusal();
            } catch {
              // not a Seal error body
            }
          }
          return r;
        }
      : this.#opts.fetch;
    return new SealClient({
      suiClient: this.#sui,
      serverConfigs: this.#opts.serverConfigs.map((s) => ({ ...s })),
      verifyKeyServers: verify,
      timeout: this.#opts.timeoutMs ?? 10_000,
      fetch: fetchFn,
    });
  }

  // ------------------------------------------------------------------ encrypt

  async encrypt(owner: string, namespace: string, plaintext: Uint8Array): Promise<Uint8Array> {
    if (typeof owner !== "string" || !isValidSuiAddress(normalizeSuiAddress(owner))) throw new PortError(PORT, "invalid", "owner must be a Sui address");
    if (typeof namespace !== "string") throw new PortError(PORT, "invalid", "namespace must be a string");
    if (this.#closed) throw new PortError(PORT, "unavailable", "encryption port closed");
    const o = normalizeSuiAddress(owner);
    const dk = await this.#dataKeyFor(o, namespace);
    if (this.#closed) throw new PortError(PORT, "unavailable", "encryption port closed");
    dk.uses++;
    if (dk.uses >= (this.#opts.maxUsesPerDataKey ?? 1 << 24)) this.#dropDataKey(`${o}\n${namespace}`, dk);
    const nonce = randomBytes(NONCE_LEN);
    const cipher = createCipheriv("aes-256-gcm", dk.key, nonce);
    cipher.setAAD(dk.header);
    const body = cipher.update(plaintext);
    const final = cipher.final();
    const tag = cipher.getAuthTag();
    const out = new Uint8Array(dk.header.length + NONCE_LEN + body.length + final.length + TAG_LEN);
    let off = 0;
    for (const part of [dk.header, nonce, body, final, tag]) {
      out.set(part, off);
      off += part.length;
    }
    return out;
  }

  #dropDataKey(mapKey: string, dk: DataKey): void {
    // Never zeroed: an encrypt that already holds it may still be using it; it becomes unreachable.
    if (this.#dataKeys.get(mapKey) === dk) this.#dataKeys.delete(mapKey);
  }

  async #dataKeyFor(owner: string, namespace: string): Promise<DataKey> {
    const mapKey = `${owner}\n${namespace}`;
    const have = this.#dataKeys.get(mapKey);
    if (have) {
      this.#dataKeys.delete(mapKey); // LRU: re-insert as most recent
      this.#dataKeys.set(mapKey, have);
      return have;
    }
    let p = this.#minting.get(mapKey);
    if (!p) {
      p = this.#mint(owner).then(
        (dk) => {
          this.#minting.delete(mapKey);
          this.#dataKeys.set(mapKey, dk);
          const max = this.#opts.maxDataKeys ?? 10_000;
          while (this.#dataKeys.size > max) this.#dataKeys.delete(this.#dataKeys.keys().next().value!);
          return dk;
        },
        (e) => {
          this.#minting.delete(mapKey);
          throw e;
        },
      );
      this.#minting.set(mapKey, p);
    }
    return p;
  }

  async #mint(owner: string): Promise<DataKey> {
    const key = randomBytes(32);
    const keyId = new Uint8Array(randomBytes(KEY_ID_LEN));
    const identity = owner.slice(2) + Buffer.from(keyId).toString("hex");
    this.#encryptClient ??= this.#newSealClient(this.#opts.verifyKeyServers ?? true);
    let sealed: Uint8Array;
    try {
      ({ encryptedObject: sealed } = await this.#encryptClient.encrypt({
        threshold: this.#opts.threshold,
        packageId: this.packageId,
        id: identity,
        data: key,
        aad: DATA_KEY_AAD,
      }));
    } catch (e) {
      // A failed key-server load is retried with a fresh client next time.
      this.#encryptClient = undefined;
      if (e instanceof InvalidThresholdError || e instanceof InvalidClientOptionsError || e instanceof InvalidPackageError) {
        throw new PortError(PORT, "invalid", `seal encrypt: ${e.constructor.name}`);
      }
      throw new PortError(PORT, "unavailable", `seal encrypt: ${e instanceof Error ? e.constructor.name : "error"}`);
    }
    return { key, header: buildHeader(owner, keyId, sealed), uses: 0 };
  }

  // ------------------------------------------------------------------ decrypt

  async decryptMany(owner: string, ciphertexts: readonly Uint8Array[], credential: DecryptCredential): Promise<(Uint8Array | null)[]> {
    const out: (Uint8Array | null)[] = ciphertexts.map(() => null);
    if (typeof owner !== "string" || !isValidSuiAddress(normalizeSuiAddress(owner))) throw new PortError(PORT, "invalid", "owner must be a Sui address");
    if (this.#closed) throw new PortError(PORT, "unavailable", "encryption port closed");
    const o = normalizeSuiAddress(owner);
    const items: Item[] = [];
    ciphertexts.forEach((c, index) => {
      try {
        const env = parseEnvelope(c);
        if (env.owner !== o) return;
        const ref = `${env.identity}:${createHash("sha256").update(env.sealedKey).digest("hex").slice(0, 32)}`;
        items.push({ index, env, ref });
      } catch {
        // malformed item: stays null
      }
    });
    // The credential is checked even when nothing is decryptable, so a bad one never looks accepted.
    const entry = await this.#sessionFor(credential);
    if (items.length === 0) return out;

    const keys = await this.#unlock(entry, o, items);
    for (const { index, env, ref } of items) {
      const key = keys.get(ref);
      if (!key) continue;
      try {
        const body = env.ciphertext.subarray(0, env.ciphertext.length - TAG_LEN);
        const tag = env.ciphertext.subarray(env.ciphertext.length - TAG_LEN);
        const d = createDecipheriv("aes-256-gcm", key, env.nonce);
        d.setAAD(env.aad);
        d.setAuthTag(tag);
        const a = d.update(body);
        const b = d.final();
        out[index] = b.length ? new Uint8Array(Buffer.concat([a, b])) : new Uint8Array(a);
      } catch {
        // tampered or foreign item: null
      }
    }
    return out;
  }

  /** Returns ref → data key for every ref it could unlock (fetching the missing ones in one round). */
  async #unlock(entry: SessionEntry, owner: string, items: readonly Item[]): Promise<Map<string, Buffer>> {
    const result = new Map<string, Buffer>();
    const waits: Promise<void>[] = [];
    const toFetch = new Map<string, { identity: string; sealed: Uint8Array }>();
    for (const { env, ref } of items) {
      if (result.has(ref) || toFetch.has(ref)) continue;
      const cached = entry.keys.get(ref);
      if (cached && Date.now() - cached.at < this.#keyMaxAge) {
        result.set(ref, Buffer.from(cached.key)); // a copy: eviction may zero the cached one meanwhile
        continue;
      }
      const inflight = entry.pending.get(ref);
      if (inflight) {
        waits.push(inflight.then((k) => void (k && result.set(ref, k))));
        continue;
      }
      toFetch.set(ref, { identity: env.identity, sealed: env.sealedKey });
    }
    if (toFetch.size > 0) {
      const batch = this.#fetchDataKeys(entry, owner, toFetch);
      for (const ref of toFetch.keys()) {
        const p = batch.then((m) => m.get(ref) ?? null);
        entry.pending.set(ref, p);
        p.catch(() => undefined).finally(() => {
          if (entry.pending.get(ref) === p) entry.pending.delete(ref);
        });
        waits.push(p.then((k) => void (k && result.set(ref, k))));
      }
    }
    await Promise.all(waits);
    return result;
  }

  async #fetchDataKeys(entry: SessionEntry, owner: string, wanted: Map<string, { identity: string; sealed: Uint8Array }>): Promise<Map<string, Buffer>> {
    const got = new Map<string, Buffer>();
    // Only Seal objects that name exactly their identity under our package, with a threshold our servers can meet.
    const valid: { ref: string; id: string; sealed: Uint8Array; threshold: number }[] = [];
    for (const [ref, { identity, sealed }] of wanted) {
      try {
        const parsed = EncryptedObject.parse(sealed);
        if (normalizeSuiAddress(parsed.packageId) !== this.packageId || parsed.id !== identity) continue;
        if (parsed.threshold < 1 || parsed.threshold > this.#totalWeight) continue;
        valid.push({ ref, id: identity, sealed, threshold: parsed.threshold });
      } catch {
        // unparseable sealed key: its items stay null
      }
    }
    if (valid.length === 0) return got;
    if (Date.now() - entry.clientAt >= this.#keyMaxAge) {
      entry.client = entry.newClient();
      entry.clientAt = Date.now();
    }
    let extra: readonly string[] = [];
    if (this.#opts.approveObjects) {
      try {
        extra = await this.#opts.approveObjects(owner);
      } catch {
        throw new PortError(PORT, "unavailable", "approve objects lookup failed");
      }
    }
    const identities = [...new Set(valid.map((v) => v.id))];
    const threshold = Math.max(...valid.map((v) => v.threshold));
    // Key servers cap identities per request; stay well under.
    for (let i = 0; i < identities.length; i += 50) {
      const chunk = identities.slice(i, i + 50);
      const tx = new Transaction();
      for (const id of chunk) {
        tx.moveCall({ target: this.#target, arguments: [tx.pure.vector("u8", Buffer.from(id, "hex")), ...extra.map((x) => tx.object(x))] });
      }
      let txBytes: Uint8Array;
      try {
        txBytes = await tx.build(extra.length ? { client: this.#sui, onlyTransactionKind: true } : { onlyTransactionKind: true });
      } catch (e) {
        throw new PortError(PORT, "unavailable", `build approve transaction: ${e instanceof Error ? e.constructor.name : "error"}`);
      }
      const refusedBefore = entry.refusals;
      try {
        await entry.client.fetchKeys({ ids: chunk, txBytes, sessionKey: entry.session, threshold });
      } catch (e) {
        const mapped = mapSealError(e, "fetch keys");
        if (mapped.kind === "unavailable" && entry.refusals > refusedBefore) {
          throw new PortError(PORT, "forbidden", "fetch keys: key servers refused the credential (others unreachable)");
        }
        throw mapped;
      }
      const inChunk = new Set(chunk);
      for (const { ref, id, sealed } of valid) {
        if (!inChunk.has(id)) continue;
        try {
          // Keys for this identity are cached in the client now: decrypt makes no further requests.
          const key = await entry.client.decrypt({ data: sealed, sessionKey: entry.session, txBytes });
          if (key.length !== 32) continue;
          // The cache holds its own copy: eviction zeroes it without touching keys a caller is still using.
          if (entry.expiresAt > Date.now() && this.#sessions.get(entry.fingerprint) === entry) {
            entry.keys.get(ref)?.key.fill(0);
            entry.keys.set(ref, { key: Buffer.from(key), at: Date.now() });
          }
          got.set(ref, Buffer.from(key));
        } catch (e) {
          if (e instanceof ExpiredSessionKeyError) throw mapSealError(e, "decrypt");
          // a bad sealed key: its items stay null
        }
      }
    }
    return got;
  }

  // ------------------------------------------------------------------ sessions

  async #sessionFor(credential: DecryptCredential): Promise<SessionEntry> {
    const fp = this.#fingerprint(credential);
    const now = Date.now();
    const have = this.#sessions.get(fp);
    if (have) {
      if (have.expiresAt > now) return have;
      this.#evict(fp);
    }
    let p = this.#opening.get(fp);
    if (!p) {
      p = this.#open(fp, credential).finally(() => this.#opening.delete(fp));
      this.#opening.set(fp, p);
    }
    return p;
  }

  #fingerprint(credential: DecryptCredential): string {
    const h = createHash("sha256");
    if (credential.kind === "session") h.update("session\n").update(credential.exported);
    else h.update("delegate-key\n").update(credential.privateKeyHex.trim().toLowerCase().replace(/^0x/, ""));
    return h.digest("hex");
  }

  async #open(fp: string, credential: DecryptCredential): Promise<SessionEntry> {
    let session: SessionKey;
    if (credential.kind === "session") {
      let data;
      try {
        data = decodeSessionHeader(credential.exported);
      } catch {
        throw new PortError(PORT, "invalid", "malformed encryption session");
      }
      if (normalizeSuiAddress(data.packageId) !== this.packageId) throw new PortError(PORT, "forbidden", "session is for another package");
      try {
        session = SessionKey.import(data, this.#sui);
      } catch (e) {
        if (e instanceof ExpiredSessionKeyError) throw new PortError(PORT, "forbidden", "encryption session expired");
        throw new PortError(PORT, "invalid", "malformed encryption session");
      }
    } else {
      let keypair;
      try {
        keypair = delegateKeypair(credential.privateKeyHex);
      } catch {
        throw new PortError(PORT, "invalid", "malformed delegate key");
      }
      try {
        const signed = await SessionKey.create({
          address: keypair.toSuiAddress(),
          packageId: this.packageId,
          ttlMin: this.#opts.legacySessionTtlMin ?? 2,
          signer: keypair,
          suiClient: this.#sui,
        });
        await signed.getCertificate();
        // Re-import without the signer so the cached session does not retain the delegate's private key.
        session = SessionKey.import({ ...signed.export() }, this.#sui);
      } catch (e) {
        throw mapSealError(e, "create session");
      }
    }
    const exp = session.export();
    const expiresAt = sessionExpiry(exp.creationTimeMs, exp.ttlMin);
    let self: SessionEntry | undefined;
    // One client per session: SealClient caches fetched keys by identity only, so sharing one across sessions
    // would hand one session's keys to another.
    const newClient = () =>
      this.#newSealClient(false, () => {
        if (self) self.refusals++;
      });
    const entry: SessionEntry = {
      fingerprint: fp,
      session,
      client: newClient(),
      clientAt: Date.now(),
      newClient,
      expiresAt,
      keys: new Map(),
      pending: new Map(),
      refusals: 0,
    };
    self = entry;
    const delay = expiresAt - Date.now();
    if (delay <= 0) throw new PortError(PORT, "forbidden", "encryption session expired");
    entry.timer = setTimeout(() => this.#evict(fp), Math.min(delay, 2 ** 31 - 1));
    entry.timer.unref();
    this.#sessions.set(fp, entry);
    const max = this.#opts.maxSessions ?? 1000;
    while (this.#sessions.size > max) this.#evict(this.#sessions.keys().next().value!);
    return entry;
  }

  #evict(fp: string): void {
    const e = this.#sessions.get(fp);
    if (!e) return;
    this.#sessions.delete(fp);
    if (e.timer) clearTimeout(e.timer);
    for (const k of e.keys.values()) k.key.fill(0);
    e.keys.clear();
  }

  /** Number of live decrypt sessions and unlocked data keys (for metrics and tests). */
  cacheStats(): { sessions: number; unlockedKeys: number; dataKeys: number } {
    let unlocked = 0;
    for (const e of this.#sessions.values()) unlocked += e.keys.size;
    return { sessions: this.#sessions.size, unlockedKeys: unlocked, dataKeys: this.#dataKeys.size };
  }

  /** Drops every cached key (encrypt and decrypt side) and stops timers; later calls fail as unavailable. */
  close(): void {
    this.#closed = true;
    for (const fp of [...this.#sessions.keys()]) this.#evict(fp);
    this.#dataKeys.clear();
  }
}

export function createEnvelopeEncryption(opts: EnvelopeEncryptionOptions): EnvelopeEncryption {
  return new EnvelopeEncryption(opts);
}
