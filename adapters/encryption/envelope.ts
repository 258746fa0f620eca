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
// The blob format is in envelope-format.ts, the encrypt side's data keys in data-keys.ts, the decrypt side's sessions
// and unlocked keys in decrypt-sessions.ts; this module checks the options and runs AES-256-GCM both ways.

import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import type { KeyServerConfig, SealCompatibleClient } from "@mysten/seal";
import { isValidSuiAddress, normalizeSuiAddress } from "@mysten/sui/utils";
import { PortError, type DecryptCredential, type EncryptionPort } from "../ports.ts";
import { suiClientFor } from "./session.ts";
import { NONCE_LEN, TAG_LEN, parseEnvelope } from "./envelope-format.ts";
import { PORT, type SealSettings } from "./seal-client.ts";
import { DataKeyCache } from "./data-keys.ts";
import { DecryptSessions, type SealedItem } from "./decrypt-sessions.ts";

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

export class EnvelopeEncryption implements EncryptionPort {
  readonly packageId: string;
  readonly #opts: EnvelopeEncryptionOptions;
  #closed = false;
  readonly #dataKeys: DataKeyCache;
  readonly #decrypt: DecryptSessions;

  constructor(opts: EnvelopeEncryptionOptions) {
    if (!isValidSuiAddress(normalizeSuiAddress(opts.packageId))) throw new Error("packageId must be an object id");
    if (opts.serverConfigs.length === 0) throw new Error("at least one key server is required");
    this.packageId = normalizeSuiAddress(opts.packageId);
    this.#opts = opts;
    const totalWeight = opts.serverConfigs.reduce((n, s) => n + s.weight, 0);
    if (!Number.isInteger(opts.threshold) || opts.threshold < 1 || opts.threshold > totalWeight) {
      throw new Error(`threshold must be in 1..${totalWeight}`);
    }
    const sui = opts.suiClient ?? (opts.rpcUrl ? suiClientFor(opts.rpcUrl) : undefined);
    if (!sui) throw new Error("rpcUrl or suiClient required");
    const seal: SealSettings = { sui, serverConfigs: opts.serverConfigs, timeoutMs: opts.timeoutMs, fetch: opts.fetch };
    this.#dataKeys = new DataKeyCache({ packageId: this.packageId, threshold: opts.threshold, verifyKeyServers: opts.verifyKeyServers ?? true, maxDataKeys: opts.maxDataKeys, seal });
    this.#decrypt = new DecryptSessions({
      packageId: this.packageId,
      seal,
      totalWeight,
      keyMaxAge: opts.keyCacheMaxAgeMs ?? 60_000,
      target: `${this.packageId}::${opts.approveModule ?? "account"}::${opts.approveFunction ?? "seal_approve"}`,
      approveObjects: opts.approveObjects,
      legacySessionTtlMin: opts.legacySessionTtlMin,
      maxSessions: opts.maxSessions,
    });
  }

  async encrypt(owner: string, namespace: string, plaintext: Uint8Array): Promise<Uint8Array> {
    if (typeof owner !== "string" || !isValidSuiAddress(normalizeSuiAddress(owner))) throw new PortError(PORT, "invalid", "owner must be a Sui address");
    if (typeof namespace !== "string") throw new PortError(PORT, "invalid", "namespace must be a string");
    if (this.#closed) throw new PortError(PORT, "unavailable", "encryption port closed");
    const o = normalizeSuiAddress(owner);
    const dk = await this.#dataKeys.get(o, namespace);
    if (this.#closed) throw new PortError(PORT, "unavailable", "encryption port closed");
    dk.uses++;
    if (dk.uses >= (this.#opts.maxUsesPerDataKey ?? 1 << 24)) this.#dataKeys.drop(o, namespace, dk);
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

  async decryptMany(owner: string, ciphertexts: readonly Uint8Array[], credential: DecryptCredential): Promise<(Uint8Array | null)[]> {
    const out: (Uint8Array | null)[] = ciphertexts.map(() => null);
    if (typeof owner !== "string" || !isValidSuiAddress(normalizeSuiAddress(owner))) throw new PortError(PORT, "invalid", "owner must be a Sui address");
    if (this.#closed) throw new PortError(PORT, "unavailable", "encryption port closed");
    const o = normalizeSuiAddress(owner);
    const items: SealedItem[] = [];
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
    const entry = await this.#decrypt.sessionFor(credential);
    if (items.length === 0) return out;

    const keys = await this.#decrypt.unlock(entry, o, items);
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

  /** Number of live decrypt sessions and unlocked data keys (for metrics and tests). */
  cacheStats(): { sessions: number; unlockedKeys: number; opened: number; refreshing: number; dataKeys: number } {
    return { ...this.#decrypt.stats(), dataKeys: this.#dataKeys.size };
  }

  /** Drops every cached key (encrypt and decrypt side) and stops timers; later calls fail as unavailable. */
  close(): void {
    this.#closed = true;
    this.#decrypt.close();
    this.#dataKeys.clear();
  }
}

export function createEnvelopeEncryption(opts: EnvelopeEncryptionOptions): EnvelopeEncryption {
  return new EnvelopeEncryption(opts);
}
