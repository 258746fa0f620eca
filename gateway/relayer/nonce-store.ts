// Nonce records in a JetStream KV bucket whose entries expire after 2 x window + 300 s: `create` is atomic
// set-if-absent across every gateway replica. While the bucket's stream elects a new leader (a NATS node lost or
// paused) a claim is tried again for a few seconds rather than failing at once (eventlog/retry-within.ts).
// A record holds the claim's own mark and the digest of the signed request it was claimed for, so that a second
// arrival of the very same signed request (a client's retry after a lost answer) is told apart from another request
// reusing the nonce (signed-auth.ts, idempotent routes).
import { randomBytes } from "node:crypto";
import type { KV } from "@nats-io/kv";
import type { NonceClaim, NonceStore } from "./signed-auth.ts";
import { isWrongLastSequence } from "../../eventlog/jetstream-errors.ts";
import { LEADER_ELECTION_BUDGET_MS, retryWithin } from "../../eventlog/retry-within.ts";

const MARK_BYTES = 8;

export class KvNonceStore implements NonceStore {
  constructor(private readonly kv: KV, private readonly budgetMs = LEADER_ELECTION_BUDGET_MS) {}

  async claim(nonce: string, requestDigest: Uint8Array): Promise<NonceClaim> {
    const key = `n.${nonce}`;
    // This claim's own mark: an attempt that timed out may have been written, and the next one then finds the key
    // taken; it is still this claim's if it holds this mark (a replay of the nonce holds another).
    const mark = randomBytes(MARK_BYTES);
    return retryWithin(this.budgetMs, async (retried) => {
      try {
        await this.kv.create(key, Buffer.concat([mark, requestDigest]));
        return "fresh";
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
        const held = await this.kv.get(key);
        if (!held) return "reused";
        const value = Buffer.from(held.value);
        if (retried && value.subarray(0, MARK_BYTES).equals(mark)) return "fresh";
        return value.subarray(MARK_BYTES).equals(requestDigest) ? "replayed" : "reused";
      }
    });
  }
}

export const nonceTtlSecs = (windowSecs: number) => 2 * windowSecs + 300;
