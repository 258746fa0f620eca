// Nonce records in a JetStream KV bucket whose entries expire after 2 x window + 300 s: `create` is atomic
// set-if-absent across every gateway replica. While the bucket's stream elects a new leader (a NATS node lost or
// paused) a claim is tried again for a few seconds rather than failing at once (eventlog/retry-within.ts).
import { randomBytes } from "node:crypto";
import type { KV } from "@nats-io/kv";
import type { NonceStore } from "./signed-auth.ts";
import { isWrongLastSequence } from "../../eventlog/jetstream-errors.ts";
import { LEADER_ELECTION_BUDGET_MS, retryWithin } from "../../eventlog/retry-within.ts";

export class KvNonceStore implements NonceStore {
  constructor(private readonly kv: KV, private readonly budgetMs = LEADER_ELECTION_BUDGET_MS) {}

  async claim(nonce: string): Promise<boolean> {
    const key = `n.${nonce}`;
    // This claim's own mark: an attempt that timed out may have been written, and the next one then finds the key
    // taken; it is still this claim's if it holds this mark (a replay of the nonce holds another).
    const mark = randomBytes(8);
    return retryWithin(this.budgetMs, async (retried) => {
      try {
        await this.kv.create(key, mark);
        return true;
      } catch (err) {
        if (!isWrongLastSequence(err)) throw err;
        if (!retried) return false;
        const held = await this.kv.get(key);
        return held !== null && Buffer.from(held.value).equals(mark);
      }
    });
  }
}

export const nonceTtlSecs = (windowSecs: number) => 2 * windowSecs + 300;
