// The byte channel between the multipart parser and the storage upload: order, backpressure, a consumer that
// leaves early, a producer that fails.
import { describe, expect, it } from "vitest";
import { ByteChannel } from "../gateway/console/channel.ts";

const drain = async (ch: AsyncIterable<Buffer>) => {
  const got: string[] = [];
  for await (const c of ch) got.push(c.toString());
  return got;
};

describe("ByteChannel", () => {
  it("hands chunks over in order, by reference, and ends", async () => {
    const ch = new ByteChannel(1 << 20);
    const a = Buffer.from("a");
    const seen: Buffer[] = [];
    const consumer = (async () => {
      for await (const c of ch) seen.push(c);
    })();
    expect(ch.push(a)).toBeUndefined();
    expect(ch.push(Buffer.from("b"))).toBeUndefined();
    ch.end();
    await consumer;
    expect(seen.map(String)).toEqual(["a", "b"]);
    expect(seen[0]).toBe(a);
  });

  it("makes the producer wait at the high-water mark until the consumer takes chunks", async () => {
    const ch = new ByteChannel(4);
    expect(ch.push(Buffer.from("12"))).toBeUndefined();
    const full = ch.push(Buffer.from("34"));
    expect(full).toBeInstanceOf(Promise);
    let released = false;
    void full!.then(() => (released = true));
    await new Promise((r) => setTimeout(r, 5));
    expect(released).toBe(false);
    const it = ch[Symbol.asyncIterator]();
    expect(String((await it.next()).value)).toBe("12");
    await new Promise((r) => setTimeout(r, 0));
    expect(released).toBe(true);
    ch.end();
    expect(String((await it.next()).value)).toBe("34");
    expect((await it.next()).done).toBe(true);
  });

  it("releases a waiting producer and drops later chunks once the consumer stops", async () => {
    const ch = new ByteChannel(2);
    const full = ch.push(Buffer.from("xyz"));
    for await (const c of ch) {
      expect(String(c)).toBe("xyz");
      break;
    }
    await full;
    expect(ch.push(Buffer.from("more"))).toBeUndefined();
  });

  it("fails the consumer's iteration with the producer's error", async () => {
    const ch = new ByteChannel(1 << 20);
    ch.push(Buffer.from("a"));
    ch.fail(new Error("client went away"));
    await expect(drain(ch)).rejects.toThrow("client went away");
  });
});
