// Which failures of a remember job's store or record attempt spend a wallet attempt (actors/relayer/wallet-attempts.ts).
import { describe, expect, it } from "vitest";
import { JetStreamApiError } from "@nats-io/jetstream";
import { spendsWalletAttempt } from "../actors/relayer/wallet-attempts.ts";
import { PortError } from "../adapters/ports.ts";
import { RecordFailed } from "../adapters/chain/record-batcher.ts";
import type { Wallet } from "../adapters/chain/wallet-pool.ts";
import { HistoryUnavailable } from "../eventlog/event-store.ts";

describe("wallet attempts", () => {
  it("an event-log outage while a quilt is sealed spends none: the host retries the effect", () => {
    const electing = new JetStreamApiError({ code: 503, err_code: 10008, description: "JetStream system temporarily unavailable" });
    expect(spendsWalletAttempt(electing)).toBe(false);
    expect(spendsWalletAttempt(new HistoryUnavailable("no event delivered within 10000 ms"))).toBe(false);
    expect(spendsWalletAttempt(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }))).toBe(false);
  });

  it("the publisher's and the chain's failures spend one, outages included: they fail the job with their reason", () => {
    expect(spendsWalletAttempt(new PortError("blobs", "unavailable", "PUT /v1/quilts answered 429 too many requests"))).toBe(true);
    expect(spendsWalletAttempt(new PortError("blobs", "rejected", "PUT /v1/quilts answered 400"))).toBe(true);
    expect(spendsWalletAttempt(new RecordFailed({ address: "0x1" } as Wallet, new PortError("chain", "unavailable", "timed out")))).toBe(true);
  });

  it("any other failure spends one, as before", () => {
    expect(spendsWalletAttempt(new Error("the publisher stored quilt q without patch p"))).toBe(true);
  });
});
