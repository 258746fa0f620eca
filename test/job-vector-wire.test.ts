// The vector in job events (issue 15): version-2 `job.uploaded` / `job.indexed` carry it as base64 float32
// (`vector_f32`), version-1 events still in a log (JSON numbers) are upcast when read, and both index the same row.
// Unit tests for the wire form and the upcaster; black-box over a started stack for what the relayer writes and indexes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { decodeVectorF32, encodeVectorF32 } from "../schemas/vector-wire.ts";
import { decodeCommit, encodeCommit, EventStore } from "../eventlog/event-store.ts";
import { STREAMS } from "../eventlog/subjects.ts";
import { JOB_EVENTS } from "../schemas/relayer/remember-job.ts";
import type { EventEnvelope } from "../schemas/envelope.ts";
import { HashingEmbedder } from "../adapters/embeddings/hashing.ts";
import { startTestStack, type TestStack } from "./support/stack.ts";

const envelope = (type: string, version: number, data: unknown): EventEnvelope => ({
  type, version, id: randomUUID(), aggregate: "job.j1", occurred_at: new Date(0).toISOString(), causation_id: "c", correlation_id: "c", data,
});

describe("vector wire form", () => {
  it("round-trips float32 values exactly and rounds others as float32 does", () => {
    const v = [0, 1, -1, 0.5, 1e-8, -3.25, 0.1, 2 ** 100];
    expect(Array.from(decodeVectorF32(encodeVectorF32(v)))).toEqual(v.map(Math.fround));
    expect(Array.from(decodeVectorF32(encodeVectorF32(new Float32Array([0.25, -7]))))).toEqual([0.25, -7]);
    expect(decodeVectorF32(encodeVectorF32([]))).toEqual(new Float32Array(0));
  });

  it("stores a dense vector as tagged little-endian float32 and a mostly-zero one sparse", () => {
    expect(Buffer.from(encodeVectorF32([1, 2]), "base64")).toEqual(Buffer.from([0x01, 0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40]));
    const sparse = new Float32Array(1024);
    sparse[3] = 0.5;
    sparse[1000] = -0.25;
    const bytes = Buffer.from(encodeVectorF32(sparse), "base64");
    expect(bytes.length).toBe(5 + 2 * 8);
    expect(bytes[0]).toBe(0x02);
    expect(decodeVectorF32(encodeVectorF32(sparse))).toEqual(sparse);
    expect(decodeVectorF32(encodeVectorF32(new Float32Array(8)))).toEqual(new Float32Array(8));
  });

  it("refuses bytes of neither form", () => {
    const b64 = (...bytes: number[]) => Buffer.from(bytes).toString("base64");
    expect(() => decodeVectorF32(b64(0x01, 1, 2, 3))).toThrow(/neither a dense nor a sparse/);
    expect(() => decodeVectorF32(b64(0x03, 0, 0, 0, 0))).toThrow(/neither a dense nor a sparse/);
    expect(() => decodeVectorF32("")).toThrow(/neither/);
    // a pair naming a dimension past the header's count, and an absurd count
    expect(() => decodeVectorF32(b64(0x02, 2, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0x80, 0x3f))).toThrow(/dimension 5 of 2/);
    expect(() => decodeVectorF32(b64(0x02, 0xff, 0xff, 0xff, 0x7f))).toThrow(/claims/);
  });

  it("upcasts version-1 job events read from the log and leaves version 2 and other events alone", () => {
    const v1Indexed = envelope(JOB_EVENTS.indexed, 1, { owner: "0xabc", blob_id: "b", vector: [0.1, -2], size: 3 });
    const v1Uploaded = envelope(JOB_EVENTS.uploaded, 1, { blob_id: "b", size: 3, vector: [1, 0], embedder: "h" });
    const v2 = envelope(JOB_EVENTS.indexed, 2, { owner: "0xabc", blob_id: "b", vector_f32: encodeVectorF32([3]), size: 3 });
    const accepted = envelope(JOB_EVENTS.accepted, 1, { owner: "0xabc", namespace: "n", accepted_at: "t", text_bytes: 1 });
    const [up1, up2, same, acc] = decodeCommit(encodeCommit({ events: [v1Indexed, v1Uploaded, v2, accepted] })).events;
    expect(up1).toMatchObject({ type: JOB_EVENTS.indexed, version: 2, id: v1Indexed.id, data: { owner: "0xabc", blob_id: "b", size: 3 } });
    expect(up1.data).not.toHaveProperty("vector");
    expect(Array.from(decodeVectorF32((up1.data as { vector_f32: string }).vector_f32))).toEqual([Math.fround(0.1), -2]);
    expect(up2).toMatchObject({ version: 2, data: { blob_id: "b", embedder: "h", vector_f32: encodeVectorF32([1, 0]) } });
    expect(same).toEqual(v2);
    expect(acc).toEqual(accepted);
  });
});

describe("job events on a running relayer", () => {
  let t: TestStack;
  beforeAll(async () => {
    t = await startTestStack();
  }, 120_000);
  afterAll(async () => t?.teardown());

  /** The index row's vector (halfvec, as text). */
  async function indexedVector(jobId: string): Promise<number[] | undefined> {
    const r = await t.stack.db.query<{ v: string }>("SELECT vector::text AS v FROM memories WHERE id = $1", [jobId]);
    return r.rows[0] ? (JSON.parse(r.rows[0].v) as number[]) : undefined;
  }

  async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const v = await fn();
      if (v !== undefined) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it("writes version-2 events with vector_f32 and indexes the embedding", async () => {
    const client = await t.client();
    const text = "The lighthouse keeper paints the railings every spring";
    const job = await client.rememberAndWait(text, "wire");
    expect(job.status).toBe("done");

    const raw = await t.stack.log.jsm.streams.getMessage(STREAMS.events, { last_by_subj: `evt.job.${job.job_id}` });
    const body = new TextDecoder().decode(raw!.data);
    expect(body).not.toContain('"vector":[');
    const events = (JSON.parse(body) as { events: EventEnvelope[] }).events;
    const indexed = events.find((e) => e.type === JOB_EVENTS.indexed)!;
    expect(indexed.version).toBe(2);
    const dims = t.stack.embedder.dims;
    const expected = new HashingEmbedder({ dims }).embedOne(text);
    expect(Array.from(decodeVectorF32((indexed.data as { vector_f32: string }).vector_f32))).toEqual(Array.from(expected));
    // at most 4 bytes per dimension (base64), where dense JSON numbers take ~20 characters each
    expect(raw!.data.length).toBeLessThan(dims * 6 + 4096);

    const row = await indexedVector(job.job_id);
    expect(row).toHaveLength(dims);
    row!.forEach((x, i) => expect(x).toBeCloseTo(expected[i], 3));
  }, 60_000);

  it("indexes a version-1 job still in the log (vector as JSON numbers) the same way", async () => {
    const who = await t.stack.createIdentity();
    const dims = t.stack.embedder.dims;
    const vector = Array.from(new HashingEmbedder({ dims }).embedOne("an event written before the wire change"));
    const jobId = randomUUID();
    const store = new EventStore(t.stack.log.js, t.stack.log.jsm);
    const ctx = { causationId: jobId, correlationId: jobId };
    const at = new Date().toISOString();
    const first = await store.append(`job.${jobId}`, [
      { type: JOB_EVENTS.accepted, version: 1, data: { owner: who.owner, namespace: "old", accepted_at: at, text_bytes: 40 } },
      { type: JOB_EVENTS.uploaded, version: 1, data: { blob_id: `old-${jobId}`, size: 40, vector, embedder: t.stack.embedder.name } },
    ], 0, ctx);
    await store.append(`job.${jobId}`, [{
      type: JOB_EVENTS.indexed,
      version: 1,
      data: { object_id: `0x${"a".repeat(64)}`, wallet: `0x${"b".repeat(64)}`, owner: who.owner, namespace: "old", blob_id: `old-${jobId}`, vector, importance: 0.5, size: 40, created_at: at, embedder: t.stack.embedder.name },
    }], first.seq, ctx);

    const row = await until("the version-1 job's index row", () => indexedVector(jobId));
    expect(row).toHaveLength(dims);
    row.forEach((x, i) => expect(x).toBeCloseTo(vector[i], 3));
    // its history reads as version 2 to every reader (the actor host's rehydration, the job lookup)
    const { events } = await store.load(`job.${jobId}`);
    expect(events.filter((e) => e.event.type !== JOB_EVENTS.accepted).map((e) => e.event.version)).toEqual([2, 2]);
  }, 60_000);
});
