// The decrypt side's sessions of the envelope encryption (adapters/encryption/envelope.ts): the client's exported
// SessionKey imported (or a short one built from a legacy delegate key), one SealClient per session, and the data
// keys unlocked through it, fetched once per identity for a whole batch (one fetch_key round, t-of-n) and kept only
// until the session expires.
import { createHash } from "node:crypto";
import { EncryptedObject, ExpiredSessionKeyError, SessionKey, type SealClient } from "@mysten/seal";
import { Transaction } from "@mysten/sui/transactions";
import { normalizeSuiAddress } from "@mysten/sui/utils";
import { PortError, type DecryptCredential } from "../ports.ts";
import { decodeSessionHeader, delegateKeypair } from "./session.ts";
import type { EnvelopeHeader } from "./envelope-format.ts";
import { PORT, mapSealError, newSealClient, type SealSettings } from "./seal-client.ts";

export interface SessionEntry {
  readonly fingerprint: string;
  readonly session: SessionKey;
  /** Replaced when older than the key cache age: SealClient keeps fetched keys, so a fresh one re-asks the servers. */
  client: SealClient;
  clientAt: number;
  readonly newClient: () => SealClient;
  readonly expiresAt: number;
  /** ref (identity ‖ sealed-key hash) → unlocked data key and when; lives at most as long as the entry. */
  readonly keys: Map<string, UnlockedKey>;
  /** ref → in-flight unlock. */
  readonly pending: Map<string, Promise<Buffer | null>>;
  /** Key-server answers that refused this session (authorization errors), counted by the client's fetch. */
  refusals: number;
  /** refs whose aging data key is being fetched again in the background. */
  readonly refreshing: Set<string>;
  /** A legacy session's replacement being built before it expires. */
  renewing?: Promise<unknown>;
  timer?: NodeJS.Timeout;
}

/**
 * An unlocked data key older than this share of the key cache age is fetched again in the background while it is
 * still served, so no request waits for the key servers once its keys are warm (a cold fetch of a namespace's key costs
 * seconds on this machine, and every key of a session ages out together). It is never served past the full age.
 */
const KEY_REFRESH_AT = 0.75;
/**
 * The refresh takes along every key of the session past this share of its age: keys unlocked together age together,
 * and one fetch_key round for all of them costs far less than one per namespace (each verifies the servers' answers
 * with pairings on the event loop).
 */
const KEY_REFRESH_ALONG = 0.5;
/** A session built from a legacy x-delegate-key is rebuilt this long before it expires, keeping its unlocked keys. */
const LEGACY_RENEW_BEFORE_MS = 30_000;

/** A data key a session unlocked, when, and what it was unlocked from (to fetch it again). */
export interface UnlockedKey {
  readonly key: Buffer;
  readonly at: number;
  readonly identity: string;
  readonly sealed: Uint8Array;
}

/** One blob of a decrypt batch. */
export interface SealedItem {
  readonly index: number;
  readonly env: EnvelopeHeader;
  /**
   * Cache key of the data key: identity plus a hash of the sealed bytes. Blobs of one key epoch share the same
   * sealed object; a blob carrying another sealed object under the same identity (anyone can Seal-encrypt to an
   * identity) gets its own entry instead of poisoning the legitimate one.
   */
  readonly ref: string;
}

function sessionExpiry(creationTimeMs: number, ttlMin: number): number {
  // The SDK treats a session as expired 10 s before its nominal end; so do we.
  return creationTimeMs + ttlMin * 60_000 - 10_000;
}

export interface DecryptSessionOptions {
  /** Normalized package id the identities live under. */
  readonly packageId: string;
  readonly seal: SealSettings;
  /** Total weight of the key servers: a sealed key asking a higher threshold is never fetched. */
  readonly totalWeight: number;
  /** How long an unlocked data key is reused (EnvelopeEncryptionOptions.keyCacheMaxAgeMs). */
  readonly keyMaxAge: number;
  /** `package::module::function` of the approve call. */
  readonly target: string;
  readonly approveObjects?: (owner: string) => Promise<readonly string[]>;
  readonly legacySessionTtlMin?: number;
  readonly maxSessions?: number;
}

export class DecryptSessions {
  readonly #opts: DecryptSessionOptions;
  readonly #sessions = new Map<string, SessionEntry>();
  readonly #opening = new Map<string, Promise<SessionEntry>>();
  /** Sessions opened so far (renewals included): how often callers paid for a new session. */
  #opened = 0;

  constructor(opts: DecryptSessionOptions) {
    this.#opts = opts;
  }

  async sessionFor(credential: DecryptCredential): Promise<SessionEntry> {
    const fp = this.#fingerprint(credential);
    const now = Date.now();
    const have = this.#sessions.get(fp);
    if (have) {
      if (have.expiresAt > now) {
        // The relayer builds a legacy session itself, so it can build the next one before this one ends: the caller
        // presents the same key on every request, and the unlocked keys move over (the same principal), as they stay
        // for the whole life of a client's exported session. Without this, every 2 minutes each legacy caller waited
        // for a new session and a cold fetch of all its namespaces' keys (the p99 of seconds in issue 29).
        if (credential.kind === "delegate-key" && have.expiresAt - now <= LEGACY_RENEW_BEFORE_MS && !have.renewing) {
          // A failed renewal is tried again by the next request; the current session serves until it ends.
          have.renewing = (this.#opening.get(fp) ?? this.#startOpen(fp, credential)).catch(() => (have.renewing = undefined));
        }
        return have;
      }
      this.#evict(fp);
    }
    return this.#opening.get(fp) ?? this.#startOpen(fp, credential);
  }

  #startOpen(fp: string, credential: DecryptCredential): Promise<SessionEntry> {
    const p = this.#open(fp, credential).finally(() => this.#opening.delete(fp));
    this.#opening.set(fp, p);
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
      if (normalizeSuiAddress(data.packageId) !== this.#opts.packageId) throw new PortError(PORT, "forbidden", "session is for another package");
      try {
        session = SessionKey.import(data, this.#opts.seal.sui);
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
          packageId: this.#opts.packageId,
          ttlMin: this.#opts.legacySessionTtlMin ?? 2,
          signer: keypair,
          suiClient: this.#opts.seal.sui,
        });
        await signed.getCertificate();
        // Re-import without the signer so the cached session does not retain the delegate's private key.
        session = SessionKey.import({ ...signed.export() }, this.#opts.seal.sui);
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
      newSealClient(this.#opts.seal, false, () => {
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
      refreshing: new Set(),
    };
    self = entry;
    const delay = expiresAt - Date.now();
    if (delay <= 0) throw new PortError(PORT, "forbidden", "encryption session expired");
    entry.timer = setTimeout(() => this.#sessions.get(fp) === entry && this.#evict(fp), Math.min(delay, 2 ** 31 - 1));
    entry.timer.unref();
    const previous = this.#sessions.get(fp);
    if (previous) {
      // A renewal: the keys the previous session unlocked carry over with their age (so KEY_REFRESH_AT and the key
      // cache age still bound them); the previous entry is dropped without zeroing what now belongs to this one.
      for (const [ref, k] of previous.keys) entry.keys.set(ref, k);
      previous.keys.clear();
      if (previous.timer) clearTimeout(previous.timer);
    }
    this.#sessions.set(fp, entry);
    this.#opened++;
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

  /** Returns ref → data key for every ref it could unlock (fetching the missing ones in one round). */
  async unlock(entry: SessionEntry, owner: string, items: readonly SealedItem[]): Promise<Map<string, Buffer>> {
    const result = new Map<string, Buffer>();
    const waits: Promise<void>[] = [];
    const toFetch = new Map<string, { identity: string; sealed: Uint8Array }>();
    let refreshDue = false;
    for (const { env, ref } of items) {
      if (result.has(ref) || toFetch.has(ref)) continue;
      const cached = entry.keys.get(ref);
      const age = cached ? Date.now() - cached.at : Infinity;
      if (cached && age < this.#opts.keyMaxAge) {
        result.set(ref, Buffer.from(cached.key)); // a copy: eviction may zero the cached one meanwhile
        if (age >= this.#opts.keyMaxAge * KEY_REFRESH_AT && !entry.refreshing.has(ref)) refreshDue = true;
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
    if (refreshDue) this.#refresh(entry, owner);
    await Promise.all(waits);
    return result;
  }

  /**
   * Fetches aging keys again in the background (#fetchDataKeys caches what it gets, with a new age). A key the servers
   * no longer give (a delegate removed on chain: the whole fetch is refused) is dropped at once instead of being served
   * to its full age; an outage leaves it to age out, and then the next request fetches it in the foreground.
   */
  #refresh(entry: SessionEntry, owner: string): void {
    const now = Date.now();
    const refs = new Map<string, { identity: string; sealed: Uint8Array }>();
    for (const [ref, k] of entry.keys) {
      if (now - k.at >= this.#opts.keyMaxAge * KEY_REFRESH_ALONG && !entry.refreshing.has(ref) && !entry.pending.has(ref)) refs.set(ref, { identity: k.identity, sealed: k.sealed });
    }
    if (!refs.size) return;
    for (const ref of refs.keys()) entry.refreshing.add(ref);
    const drop = (ref: string) => {
      entry.keys.get(ref)?.key.fill(0);
      entry.keys.delete(ref);
      // The session's SealClient still holds what it fetched for this key and would answer the next request from its
      // own cache without asking the servers: a refused key must be asked for anew.
      entry.client = entry.newClient();
      entry.clientAt = Date.now();
    };
    this.#fetchDataKeys(entry, owner, refs, { refresh: true })
      .then(
        (got) => {
          for (const ref of refs.keys()) if (!got.has(ref)) drop(ref);
          for (const k of got.values()) k.fill(0); // the cache holds its own copies
        },
        (err) => {
          if (err instanceof PortError && err.kind === "forbidden") for (const ref of refs.keys()) drop(ref);
        },
      )
      .finally(() => {
        for (const ref of refs.keys()) entry.refreshing.delete(ref);
      });
  }

  async #fetchDataKeys(entry: SessionEntry, owner: string, wanted: Map<string, { identity: string; sealed: Uint8Array }>, opts: { refresh?: boolean } = {}): Promise<Map<string, Buffer>> {
    const got = new Map<string, Buffer>();
    // Only Seal objects that name exactly their identity under our package, with a threshold our servers can meet.
    const valid: { ref: string; id: string; sealed: Uint8Array; threshold: number }[] = [];
    for (const [ref, { identity, sealed }] of wanted) {
      try {
        const parsed = EncryptedObject.parse(sealed);
        if (normalizeSuiAddress(parsed.packageId) !== this.#opts.packageId || parsed.id !== identity) continue;
        if (parsed.threshold < 1 || parsed.threshold > this.#opts.totalWeight) continue;
        valid.push({ ref, id: identity, sealed, threshold: parsed.threshold });
      } catch {
        // unparseable sealed key: its items stay null
      }
    }
    if (valid.length === 0) return got;
    // A refresh must reach the key servers (they re-evaluate the policy: a removed delegate is refused), but a
    // SealClient answers identities it fetched before from its own cache; so a refresh uses a client of its own.
    if (!opts.refresh && Date.now() - entry.clientAt >= this.#opts.keyMaxAge) {
      entry.client = entry.newClient();
      entry.clientAt = Date.now();
    }
    const client = opts.refresh ? entry.newClient() : entry.client;
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
        tx.moveCall({ target: this.#opts.target, arguments: [tx.pure.vector("u8", Buffer.from(id, "hex")), ...extra.map((x) => tx.object(x))] });
      }
      let txBytes: Uint8Array;
      try {
        txBytes = await tx.build(extra.length ? { client: this.#opts.seal.sui, onlyTransactionKind: true } : { onlyTransactionKind: true });
      } catch (e) {
        throw new PortError(PORT, "unavailable", `build approve transaction: ${e instanceof Error ? e.constructor.name : "error"}`);
      }
      const refusedBefore = entry.refusals;
      try {
        await client.fetchKeys({ ids: chunk, txBytes, sessionKey: entry.session, threshold });
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
          const key = await client.decrypt({ data: sealed, sessionKey: entry.session, txBytes });
          if (key.length !== 32) continue;
          // The cache holds its own copy: eviction zeroes it without touching keys a caller is still using.
          if (entry.expiresAt > Date.now() && this.#sessions.get(entry.fingerprint) === entry) {
            entry.keys.get(ref)?.key.fill(0);
            entry.keys.set(ref, { key: Buffer.from(key), at: Date.now(), identity: id, sealed });
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

  /** Number of live sessions, of the data keys they hold unlocked, and of sessions opened so far. */
  stats(): { sessions: number; unlockedKeys: number; opened: number; refreshing: number } {
    let unlocked = 0;
    let refreshing = 0;
    for (const e of this.#sessions.values()) {
      unlocked += e.keys.size;
      refreshing += e.refreshing.size;
    }
    return { sessions: this.#sessions.size, unlockedKeys: unlocked, opened: this.#opened, refreshing };
  }

  /** Evicts every session (zeroing its keys and stopping its timer). */
  close(): void {
    for (const fp of [...this.#sessions.keys()]) this.#evict(fp);
  }
}
