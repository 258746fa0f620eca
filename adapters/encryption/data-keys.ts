// The encrypt side's data keys of the envelope encryption (adapters/encryption/envelope.ts): one random 256-bit key
// per (owner, namespace, key epoch), Seal-encrypted once and kept, with its blob header, only in this process's
// memory (least recently used first out; an evicted or used-up key only means a new epoch).
import { randomBytes } from "node:crypto";
import { InvalidClientOptionsError, InvalidPackageError, InvalidThresholdError, type SealClient } from "@mysten/seal";
import { PortError } from "../ports.ts";
import { KEY_ID_LEN, buildHeader } from "./envelope-format.ts";
import { PORT, newSealClient, type SealSettings } from "./seal-client.ts";

/** Seal-level AAD of every sealed data key: ties the Seal object to its use here. */
const DATA_KEY_AAD = new TextEncoder().encode("memrelay/envelope/data-key/v1");

export interface DataKey {
  readonly key: Buffer;
  readonly header: Uint8Array;
  uses: number;
}

export interface DataKeyOptions {
  /** Normalized package id the identities live under. */
  readonly packageId: string;
  readonly threshold: number;
  readonly verifyKeyServers: boolean;
  /** Cached (owner, namespace) data keys (default 10,000). */
  readonly maxDataKeys?: number;
  readonly seal: SealSettings;
}

export class DataKeyCache {
  readonly #opts: DataKeyOptions;
  #encryptClient: SealClient | undefined;
  readonly #dataKeys = new Map<string, DataKey>();
  readonly #minting = new Map<string, Promise<DataKey>>();

  constructor(opts: DataKeyOptions) {
    this.#opts = opts;
  }

  get size(): number {
    return this.#dataKeys.size;
  }

  /** The current data key of (owner, namespace), minted on first use; one mint at a time per pair. */
  async get(owner: string, namespace: string): Promise<DataKey> {
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

  /** Ends the epoch of `dk` (the next get mints a new key) if it is still the current one. */
  drop(owner: string, namespace: string, dk: DataKey): void {
    const mapKey = `${owner}\n${namespace}`;
    // Never zeroed: an encrypt that already holds it may still be using it; it becomes unreachable.
    if (this.#dataKeys.get(mapKey) === dk) this.#dataKeys.delete(mapKey);
  }

  clear(): void {
    this.#dataKeys.clear();
  }

  async #mint(owner: string): Promise<DataKey> {
    const key = randomBytes(32);
    const keyId = new Uint8Array(randomBytes(KEY_ID_LEN));
    const identity = owner.slice(2) + Buffer.from(keyId).toString("hex");
    this.#encryptClient ??= newSealClient(this.#opts.seal, this.#opts.verifyKeyServers);
    let sealed: Uint8Array;
    try {
      ({ encryptedObject: sealed } = await this.#encryptClient.encrypt({
        threshold: this.#opts.threshold,
        packageId: this.#opts.packageId,
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
}
