// Nonce records in a JetStream KV bucket whose entries expire after 2 x window + 300 s: `create` is atomic
// set-if-absent across every gateway replica.
import type { KV } from "@nats-io/kv";
import type { NonceStore } from "./signed-auth.ts";
import { isWrongLastSequence } from "../../eventlog/jetstream-errors.ts";

export class KvNonceStore implements NonceStore {
  constructor(private readonly kv: KV) {}

  async claim(nonce: string): Promise<boolean> {
    try {
      await this.kv.create(`n.${nonce}`, new Uint8Array(0));
      return true;
    } catch (err) {
      if (isWrongLastSequence(err)) return false;
      throw err;
    }
  }
}

export const nonceTtlSecs = (windowSecs: number) => 2 * windowSecs + 300;
