// How a recall reads its hits' blobs (projections/relayer/ciphertext-reads.ts): an outage is read again within the
// attempts and the time budget, then fails the read; a blob that is gone is null at once. The black-box side (HTTP,
// a started stack, an aggregator failing on purpose) is test/recall-blob-faults.test.ts.
import { describe, expect, it } from "vitest";
import { PortError, type BlobPort } from "../adapters/ports.ts";
import { readCiphertexts, type ReadRetry } from "../projections/relayer/ciphertext-reads.ts";

/** A blob port whose n-th read of a blob (from 1) does what `answer` says, after `delayMs`. */
function blobsAnswering(answer: (n: number) => Uint8Array | Error, delayMs = 0): BlobPort & { reads: number } {
  const port = {
    reads: 0,
    store: () => Promise.reject(new Error("not in this test")),
    storeQuilt: () => Promise.reject(new Error("not in this test")),
    read: async () => {
      const a = answer(++port.reads);
      await new Promise((r) => setTimeout(r, delayMs));
      if (a instanceof Error) throw a;
      return a;
    },
  };
  return port;
}

const bytes = new Uint8Array([1, 2, 3]);
const outage = () => new PortError("blobs", "unavailable", "GET /v1/blobs/x answered 503");
const quick: ReadRetry = { attempts: 3, firstPauseMs: 10, budgetMs: 1_000 };

describe("reading a recall's ciphertexts", () => {
  it("reads a blob again after an outage or a reset connection and returns its bytes", async () => {
    const reset = Object.assign(new Error("other side closed"), { code: "ECONNRESET" });
    const port = blobsAnswering((n) => (n === 1 ? outage() : n === 2 ? reset : bytes));
    expect(await readCiphertexts(port, ["a"], quick)).toEqual([bytes]);
    expect(port.reads).toBe(3);
  });

  it("fails with the outage once the attempts are spent", async () => {
    const port = blobsAnswering(outage);
    await expect(readCiphertexts(port, ["a"], quick)).rejects.toMatchObject({ kind: "unavailable" });
    expect(port.reads).toBe(3);
  });

  it("does not send again a read that failed past the budget (a timeout)", async () => {
    const port = blobsAnswering(outage, 60);
    await expect(readCiphertexts(port, ["a"], { attempts: 3, firstPauseMs: 10, budgetMs: 50 })).rejects.toMatchObject({ kind: "unavailable" });
    expect(port.reads).toBe(1);
  });

  it("gives null at once for a blob that is gone or cannot be had, beside one that is read", async () => {
    const gone = blobsAnswering(() => new PortError("blobs", "not_found", "GET /v1/blobs/x answered 404"));
    expect(await readCiphertexts(gone, ["a"], quick)).toEqual([null]);
    expect(gone.reads).toBe(1);
    const refused = blobsAnswering((n) => (n === 1 ? new PortError("blobs", "invalid", "quilt q: not a quilt") : bytes));
    expect(await readCiphertexts(refused, ["a", "b"], quick)).toEqual([null, bytes]);
    expect(refused.reads).toBe(2);
  });
});
