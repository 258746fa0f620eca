// Request signatures verified on worker threads answer exactly as OpenSSL on the event loop does: valid ones true,
// tampered messages, other keys, malformed keys and signatures false, item by item within one batch; and a pool
// stopped with verifications in flight still answers each of them correctly (on the event loop).
import { describe, expect, it } from "vitest";
import { generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { InlineVerifier, WorkerVerifier, type SignatureVerifier } from "../gateway/relayer/signature-verifier.ts";

const keyPair = () => {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const raw = publicKey.export({ format: "der", type: "spki" }).subarray(12);
  return { raw, privateKey };
};

interface Case { name: string; message: Buffer; publicKey: Uint8Array; signature: Uint8Array; valid: boolean }

function cases(n: number): Case[] {
  const a = keyPair(), b = keyPair();
  const out: Case[] = [];
  for (let i = 0; i < n; i++) {
    const message = randomBytes(20 + (i % 300));
    const signature = sign(null, message, a.privateKey);
    const tampered = Buffer.from(message);
    tampered[0] ^= 1;
    out.push(
      { name: "valid", message, publicKey: a.raw, signature, valid: true },
      { name: "tampered message", message: tampered, publicKey: a.raw, signature, valid: false },
      { name: "another key", message, publicKey: b.raw, signature, valid: false },
      { name: "flipped signature bit", message, publicKey: a.raw, signature: Buffer.from(signature).fill(signature[5]! ^ 4, 5, 6), valid: false },
      { name: "key that is no curve point", message, publicKey: Buffer.alloc(32, 0xff), signature, valid: false },
      { name: "short signature", message, publicKey: a.raw, signature: signature.subarray(0, 63), valid: false },
      { name: "empty message, valid", message: Buffer.alloc(0), publicKey: b.raw, signature: sign(null, Buffer.alloc(0), b.privateKey), valid: true },
    );
  }
  return out;
}

const answers = (v: SignatureVerifier, cs: Case[]) => Promise.all(cs.map((c) => v.verify(c.message, c.publicKey, c.signature)));

describe("signature verification on worker threads", () => {
  it("answers every item of a mixed batch as the event loop does", async () => {
    const cs = cases(40);
    const pool = new WorkerVerifier(2);
    try {
      const got = await answers(pool, cs);
      expect(got).toEqual(cs.map((c) => c.valid));
      expect(await answers(new InlineVerifier(), cs)).toEqual(got);
    } finally {
      await pool.close();
    }
  });

  it("answers what was in flight when the workers stopped, and what is asked afterwards", async () => {
    const cs = cases(200);
    const pool = new WorkerVerifier(1);
    const pending = answers(pool, cs);
    await new Promise((r) => setImmediate(r));
    await pool.close();
    expect(await pending).toEqual(cs.map((c) => c.valid));
    expect(await answers(pool, cs.slice(0, 14))).toEqual(cs.slice(0, 14).map((c) => c.valid));
  });
});
