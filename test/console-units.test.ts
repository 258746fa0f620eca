// The console's pure parts: machines as given events / when command / then events and effect (deciders), the
// streaming multipart parser, and the HTTP contract's validation.
import { describe, expect, it } from "vitest";
import { Effect } from "effect";
import { Readable } from "node:stream";
import { randomBytes } from "node:crypto";
import type { AnyStateMachine } from "xstate";
import { evolve, effectOf, type ActorDefinition } from "../actors/host.ts";
import { initialSnapshot, type SnapshotOf } from "../actors/machine-steps.ts";
import type { EventEnvelope } from "../schemas/envelope.ts";
import { isConsoleCommand, type ConsoleCommand } from "../schemas/console/commands.ts";
import type { NewEvent } from "../eventlog/event-store.ts";
import { AGG, CMD, EV, isConsoleEvent, type NewConsoleEvent } from "../schemas/console/events.ts";
import { bucketActor } from "../actors/console/bucket.actor.ts";
import { uploadActor } from "../actors/console/upload.actor.ts";
import { fileActor } from "../actors/console/file.actor.ts";
import { keyActor } from "../actors/console/key.actor.ts";
import { sponsorActor } from "../actors/console/sponsor.actor.ts";
import type { ConsoleActorPorts } from "../actors/console/ports.ts";
import { PortError, SignatureRejected } from "../adapters/ports.ts";
import { boundaryOf, parseMultipart, partialDelimiterAt } from "../gateway/console/multipart.ts";
import { ConsoleHttpError, decodeCursor, encodeCursor, parseBucketListQuery, parseFileMetadata, parseSponsor, parseUpdateBucket, validateBucketName, validateFileName } from "../schemas/console/http.ts";
import { multipartBody } from "../client/console-client.ts";
import { ConfigError, consoleLimitsFromEnv, loadConfig } from "../config/env.ts";
import { encodeCommit, envelope } from "../eventlog/event-store.ts";
import { consoleProjection } from "../projections/console/read-models.ts";

const ports = {} as ConsoleActorPorts;

function given<M extends AnyStateMachine>(def: ActorDefinition<ConsoleCommand, M, NewConsoleEvent>, events: NewEvent[]): SnapshotOf<M> {
  return evolve(def.machine, initialSnapshot(def.machine), events.map((e, i) => ({ ...e, id: String(i), aggregate: "x", occurred_at: new Date().toISOString(), causation_id: "c", correlation_id: "c" }) as EventEnvelope));
}
// Partial data on purpose: each test gives only the fields the decision reads.
const cmd = (type: string, data: unknown = {}) => ({ type, version: 1, id: "c1", aggregate: "a", issued_at: new Date().toISOString(), correlation_id: "c", data }) as ConsoleCommand;
const ev = (type: string, data: unknown = {}): NewEvent => ({ type, version: 1, data });
const types = (es: NewEvent[]) => es.map((e) => e.type);

describe("bucket machine", () => {
  const def = bucketActor(ports);
  const reserved = ev(EV.bucketReserved, { bucket_id: "b", space_id: "s", name: "n", visibility: "private", storage_bucket_name: "wc-b", name_claim: "c", created_by: "u", created_at: "t", tx_bytes: "AA==", digest: "d", sender: "0x1" });

  it("reserve → pending_policy, no effect: uploads wait for finalize", () => {
    const s0 = given(def, []);
    expect(types(def.decide(s0, cmd(CMD.bucketReserve, reserved.data)))).toEqual([EV.bucketReserved]);
    const s1 = given(def, [reserved]);
    expect(s1.value).toBe("pending_policy");
    expect(effectOf(s1)).toBeUndefined();
    expect(def.decide(s1, cmd(CMD.bucketReserve, reserved.data))).toEqual([]);
  });

  it("finalize → finalizing runs execute_policy; policy created → provisioning → active; a refusal returns to pending_policy", () => {
    const s1 = given(def, [reserved]);
    expect(types(def.decide(s1, cmd(CMD.bucketFinalize, { signature: "x", requested_by: "u" })))).toEqual([EV.bucketFinalizeRequested]);
    const s2 = given(def, [reserved, ev(EV.bucketFinalizeRequested)]);
    expect(effectOf(s2)?.effect).toBe("execute_policy");
    expect(def.decide(s2, cmd(CMD.bucketFinalize))).toEqual([]);
    const failed = given(def, [reserved, ev(EV.bucketFinalizeRequested), ev(EV.bucketFinalizeFailed, { code: "chain_rejected", error: "no" })]);
    expect(failed.value).toBe("pending_policy");
    const s3 = given(def, [reserved, ev(EV.bucketFinalizeRequested), ev(EV.bucketPolicyCreated, { policy_id: "0xp", chain_digest: "d", policy: {} })]);
    expect(s3.value).toBe("provisioning");
    expect(effectOf(s3)?.effect).toBe("provision");
    expect(s3.context.policy_id).toBe("0xp");
    const s4 = given(def, [reserved, ev(EV.bucketFinalizeRequested), ev(EV.bucketPolicyCreated, { policy_id: "0xp", chain_digest: "d", policy: {} }), ev(EV.bucketActivated)]);
    expect(s4.value).toBe("active");
  });

  it("update only when active; null clears the policy; delete → deleting (durable) → deleted; repeated deletes decide nothing", () => {
    const active = [ev(EV.bucketCreated, { bucket_id: "b", name: "n", name_claim: "c", storage_bucket_name: "wc-b" }), ev(EV.bucketActivated)];
    expect(def.decide(given(def, [reserved]), cmd(CMD.bucketUpdate, { name: "m", updated_at: "t" }))).toEqual([]);
    const s = given(def, [...active, ev(EV.bucketUpdated, { encryption_policy_id: null, updated_at: "t" })]);
    expect(s.context.policy_id).toBeNull();
    expect(types(def.decide(s, cmd(CMD.bucketDelete)))).toEqual([EV.bucketDeleteRequested]);
    const deleting = given(def, [...active, ev(EV.bucketDeleteRequested)]);
    expect(effectOf(deleting)).toEqual({ effect: "deprovision", durableBefore: true });
    expect(def.decide(deleting, cmd(CMD.bucketDelete))).toEqual([]);
    expect(given(def, [...active, ev(EV.bucketDeleteRequested), ev(EV.bucketDeleted)]).status).toBe("done");
  });

  it("finalize: the chain rejecting the signature fails with invalid_signature, its other refusals, forbidden ones too, with chain_rejected", async () => {
    const failedWith = async (refusal: PortError) => {
      const def = bucketActor({ ...ports, sponsorKey: randomBytes(32), chain: { execute: () => Promise.reject(refusal) } } as unknown as ConsoleActorPorts);
      const finalizing = given(def, [reserved, ev(EV.bucketFinalizeRequested)]);
      const effect = def.effects.execute_policy({ aggregateId: "b", context: finalizing.context, command: cmd(CMD.bucketFinalize, { signature: "x", requested_by: "u" }) });
      return (await Effect.runPromise(effect)).map((e) => e.data);
    };
    expect(await failedWith(new SignatureRejected("chain", "invalid signature"))).toEqual([{ code: "invalid_signature", error: "chain: invalid signature" }]);
    // a signature that verifies but is not the sender's, or the sponsor not being the gas owner: not the client's signature to correct
    expect(await failedWith(new PortError("chain", "forbidden", "transaction not signed by its sender"))).toEqual([{ code: "chain_rejected", error: "chain: transaction not signed by its sender" }]);
    expect(await failedWith(new PortError("chain", "rejected", "object is locked"))).toEqual([{ code: "chain_rejected", error: "chain: object is locked" }]);
  });
});

describe("upload machine", () => {
  const def = uploadActor(ports);
  const queued = ev(EV.uploadQueued, { file_id: "f" });
  it("a worker taking the job records queued and started at once; active runs commit → completed, appended with them", () => {
    expect(types(def.decide(given(def, []), cmd(CMD.uploadStart, queued.data)))).toEqual([EV.uploadQueued, EV.uploadStarted]);
    expect(given(def, [queued]).value).toBe("queued");
    const a = given(def, [queued, ev(EV.uploadStarted)]);
    expect(a.value).toBe("active");
    // commit's checks are quick and read-only: queued, started and the outcome go to the log in one commit
    expect(effectOf(a)).toEqual({ effect: "commit" });
    const c = given(def, [queued, ev(EV.uploadStarted), ev(EV.uploadCompleted, { storage_object_id: "wc-b/f" })]);
    expect(c.status).toBe("done");
    expect(c.value).toBe("completed");
    expect(c.context.storage_object_id).toBe("wc-b/f");
    expect(def.decide(c, cmd(CMD.uploadStart, queued.data))).toEqual([]);
  });
  it("a failed commit cleans up (durable) and ends failed", () => {
    const f = given(def, [queued, ev(EV.uploadStarted), ev(EV.uploadFailed, { code: "blob_missing", message: "m", failed_at: "t" })]);
    expect(f.value).toBe("failing");
    expect(effectOf(f)).toEqual({ effect: "cleanup", durableBefore: true });
    expect(f.context.failure.code).toBe("blob_missing");
    expect(given(def, [queued, ev(EV.uploadStarted), ev(EV.uploadFailed, { code: "x" }), ev(EV.uploadCleaned)]).value).toBe("failed");
  });
});

describe("file machine", () => {
  const def = fileActor(ports);
  const del = { requested_by: "u", requested_at: "t", bucket_id: "b", space_id: "s", storage_bucket_name: "wc-b", storage_key: "f", name_claim: "c", size: 5 };
  it("a file is completed until DELETE: deleting (durable release) → deleted; repeats are deduplicated", () => {
    const c = given(def, []);
    expect(c.value).toBe("completed");
    expect(types(def.decide(c, cmd(CMD.fileDelete, del)))).toEqual([EV.fileDeleteRequested]);
    const d = given(def, [ev(EV.fileDeleteRequested, del)]);
    expect(effectOf(d)).toEqual({ effect: "release", durableBefore: true });
    expect(d.context.file.storage_key).toBe("f");
    expect(def.decide(d, cmd(CMD.fileDelete, del))).toEqual([]);
    expect(def.decide(given(def, [ev(EV.fileDeleteRequested, del), ev(EV.fileDeleted)]), cmd(CMD.fileDelete, del))).toEqual([]);
  });
  it("a failed upload is discarded at once", () => {
    const discard = def.decide(given(def, []), cmd(CMD.fileDelete, { ...del, upload_failed: true }));
    expect(types(discard)).toEqual([EV.fileDeleteRequested, EV.fileDeleted]);
    expect((discard[1].data as { size: number }).size).toBe(0);
    expect(given(def, [discard[0], discard[1]]).value).toBe("deleted");
  });
});

describe("key and sponsorship machines", () => {
  it("key: minted → registering (durable register) → active → revoking (durable revoke) → revoked", () => {
    const def = keyActor({ clog: {} as never });
    const minted = ev(EV.keyMinted, { key_id: "k" });
    expect(types(def.decide(given(def, []), cmd(CMD.keyMint, minted.data)))).toEqual([EV.keyMinted]);
    expect(effectOf(given(def, [minted]))).toEqual({ effect: "register", durableBefore: true });
    const active = given(def, [minted, ev(EV.keyActivated)]);
    expect(types(def.decide(active, cmd(CMD.keyRevoke)))).toEqual([EV.keyRevokeRequested]);
    expect(effectOf(given(def, [minted, ev(EV.keyActivated), ev(EV.keyRevokeRequested)]))).toEqual({ effect: "revoke", durableBefore: true });
    const revoked = given(def, [minted, ev(EV.keyActivated), ev(EV.keyRevokeRequested), ev(EV.keyRevoked)]);
    expect(def.decide(revoked, cmd(CMD.keyRevoke))).toEqual([]);
  });
  it("sponsorship: reserved → execute (expiry decided on the clock) → executing → executed, or back to reserved on refusal", () => {
    let now = Date.parse("2026-01-01T00:00:00Z");
    const def = sponsorActor(ports);
    const at = (c: ConsoleCommand): ConsoleCommand => ({ ...c, issued_at: new Date(now).toISOString() });
    const reserved = ev(EV.sponsorReserved, { digest: "d", expires_at: "2026-01-01T00:05:00Z" });
    const s = given(def, [reserved]);
    expect(types(def.decide(s, at(cmd(CMD.sponsorExecute, { signature: "x", requested_at: "t" }))))).toEqual([EV.sponsorExecuteRequested]);
    expect(effectOf(given(def, [reserved, ev(EV.sponsorExecuteRequested)]))?.effect).toBe("execute");
    expect(given(def, [reserved, ev(EV.sponsorExecuteRequested), ev(EV.sponsorFailed, { code: "chain_rejected", error: "x" })]).value).toBe("reserved");
    expect(given(def, [reserved, ev(EV.sponsorExecuteRequested), ev(EV.sponsorExecuted, { chain_digest: "c" })]).value).toBe("executed");
    now += 10 * 60_000;
    expect(types(def.decide(s, at(cmd(CMD.sponsorExecute, { signature: "x" }))))).toEqual([EV.sponsorExpired]);
    expect(AGG.sponsor).toBe("console.sponsor");
  });
  it("sponsorship: the chain rejecting a signature fails with invalid_signature, its other refusals with chain_rejected, whatever they say", async () => {
    const failedWith = async (refusal: PortError) => {
      const def = sponsorActor({ ...ports, sponsorKey: randomBytes(32), chain: { execute: () => Promise.reject(refusal) } } as unknown as ConsoleActorPorts);
      const executing = given(def, [ev(EV.sponsorReserved, { digest: "d", tx_bytes: "AAAA", expires_at: "2026-01-01T00:05:00Z" }), ev(EV.sponsorExecuteRequested)]);
      const events = await Effect.runPromise(def.effects.execute({ aggregateId: "d", context: executing.context, command: cmd(CMD.sponsorExecute, { signature: "x" }) }));
      return events.map((e) => e.data);
    };
    expect(await failedWith(new SignatureRejected("chain", "invalid signature"))).toEqual([{ code: "invalid_signature", error: "chain: invalid signature", kind: "forbidden" }]);
    // the local ledger's refusal of a Walrus certificate mentions a signature, but not the client's
    expect(await failedWith(new PortError("chain", "forbidden", "the aggregate signature does not verify for the signers"))).toEqual([
      { code: "chain_rejected", error: "chain: the aggregate signature does not verify for the signers", kind: "forbidden" },
    ]);
    expect(await failedWith(new PortError("chain", "rejected", "object is locked"))).toEqual([{ code: "chain_rejected", error: "chain: object is locked", kind: "rejected" }]);
  });
});

describe("the clock is an input", () => {
  it("effects record what they saw and did at the time of the console log's injected clock", async () => {
    const at = "2026-03-04T05:06:07.000Z";
    const clog = { clock: { now: () => at } } as unknown as ConsoleActorPorts["clog"];
    const key = keyActor({ clog });
    const revoking = given(key, [ev(EV.keyMinted, { key_id: "k" }), ev(EV.keyActivated), ev(EV.keyRevokeRequested)]);
    const revoked = await Effect.runPromise(key.effects.revoke({ aggregateId: "k", context: revoking.context, command: cmd(CMD.keyRevoke) }));
    expect(revoked).toEqual([{ type: EV.keyRevoked, version: 1, data: { revoked_at: at } }]);
    const bucket = bucketActor({ clog, storage: { ensureBucket: async () => undefined } } as unknown as ConsoleActorPorts);
    const provisioning = given(bucket, [ev(EV.bucketCreated, { bucket_id: "b", name: "n", name_claim: "c", storage_bucket_name: "wc-b" })]);
    const activated = await Effect.runPromise(bucket.effects.provision({ aggregateId: "b", context: provisioning.context, command: cmd(CMD.bucketCreate) }));
    expect(activated).toEqual([{ type: EV.bucketActivated, version: 1, data: { activated_at: at } }]);
  });
});

describe("multipart parser", () => {
  async function parse(body: Buffer, boundary: string, chunk: number, fileBytes = 1 << 30) {
    const fields: Record<string, string> = {};
    let file: { info: unknown; bytes: Buffer } | undefined;
    const chunks: Buffer[] = [];
    for (let i = 0; i < body.length; i += chunk) chunks.push(body.subarray(i, i + chunk));
    await parseMultipart(Readable.from(chunks), boundary, { fileBytes, fieldBytes: 1024, fields: 8, headerBytes: 1024 }, {
      onField: (n, v) => (fields[n] = v),
      onFile: async (info, stream) => {
        const parts: Buffer[] = [];
        for await (const c of stream) parts.push(c as Buffer);
        file = { info, bytes: Buffer.concat(parts) };
      },
    });
    return { fields, file };
  }
  async function asBuffer(r: Readable) {
    const parts: Buffer[] = [];
    for await (const c of r) parts.push(Buffer.from(c));
    return Buffer.concat(parts);
  }

  it("parses fields and the file whatever the chunking, boundary-like bytes included", async () => {
    const payload = Buffer.concat([Buffer.from("\r\n--"), Buffer.alloc(5000, 0x2d), Buffer.from("\r\n--almost-the-boundary\r\n"), Buffer.from([0, 255, 13, 10])]);
    const mp = multipartBody({ bytes: payload, filename: "héllo wörld.bin", name: "given name", metadata: { a: 1 }, contentType: "application/x-thing" });
    const body = await asBuffer(mp.body);
    const boundary = boundaryOf(mp.contentType);
    for (const chunk of [1, 7, 64, 1000, body.length]) {
      const r = await parse(body, boundary, chunk);
      expect(r.fields).toEqual({ name: "given name", metadata: '{"a":1}' });
      expect(r.file?.info).toEqual({ field: "file", filename: "héllo wörld.bin", contentType: "application/x-thing" });
      expect(r.file?.bytes.equals(payload)).toBe(true);
    }
  });

  it("large files in large and uneven chunks, with partial delimiters at chunk ends", async () => {
    const boundary = "----memrelay-test-boundary";
    const delimiter = Buffer.from(`\r\n--${boundary}`);
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n`);
    const payload = randomBytes(1 << 20);
    // proper prefixes of the delimiter (1 byte up to all but one) ending exactly where chunks used below end
    [65_536, 100_000, 524_288, 2 * 524_288, 777_777].forEach((end, k) => {
      const n = [1, 2, 9, delimiter.length - 1, 17][k];
      delimiter.copy(payload, end - head.length - n, 0, n);
      // the random byte after a prefix must not continue it (1 in 256 would complete a 29-byte prefix: a flaky test)
      if (payload[end - head.length] === delimiter[n]) payload[end - head.length] ^= 0xff;
    });
    const body = Buffer.concat([head, payload, Buffer.from(`\r\n--${boundary}--\r\n`)]);
    for (const chunk of [65_536, 100_000, 524_288, 777_777]) {
      const r = await parse(body, boundary, chunk);
      expect(r.file?.bytes.equals(payload)).toBe(true);
    }
    expect(partialDelimiterAt(Buffer.from("abc\r\n-"), delimiter)).toBe(3);
    expect(partialDelimiterAt(Buffer.from("abc\r\nx"), delimiter)).toBe(6);
    expect(partialDelimiterAt(Buffer.concat([Buffer.from("ab"), delimiter.subarray(0, delimiter.length - 1)]), delimiter)).toBe(2);
  });

  it("passes the file data of a chunk that starts with the form's fields and headers on in place (no copy)", async () => {
    const boundary = "----memrelay-in-place";
    const note = "n".repeat(20_000); // a field longer than the pieces the fields and headers are parsed in
    const payload = randomBytes(600 * 1024);
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="note"\r\n\r\n${note}\r\n`),
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\n\r\n`),
      payload,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    for (const chunk of [body.length, 512 * 1024]) {
      const source = Buffer.from(body); // one ArrayBuffer behind every chunk
      const chunks: Buffer[] = [];
      for (let i = 0; i < source.length; i += chunk) chunks.push(source.subarray(i, i + chunk));
      const got: Buffer[] = [];
      let note2 = "";
      await parseMultipart(Readable.from(chunks), boundary, { fileBytes: 1 << 30, fieldBytes: 32 * 1024, fields: 8, headerBytes: 1024 }, {
        onField: (_n, v) => (note2 = v),
        onFile: async (_info, stream) => {
          for await (const c of stream) got.push(c as Buffer);
        },
      });
      expect(note2).toBe(note);
      expect(Buffer.concat(got).equals(payload)).toBe(true);
      const inPlace = got.filter((c) => c.buffer === source.buffer).reduce((a, c) => a + c.length, 0);
      // views of the received chunks, all but (rarely) a chunk's last bytes that could start the closing delimiter
      expect(inPlace).toBeGreaterThanOrEqual(payload.length - boundary.length - 4);
      // as the chunks came: the first piece of data starts right after the file part's headers
      expect(got[0].byteOffset).toBe(body.indexOf(payload.subarray(0, 64)));
    }
  });

  it("filename* (RFC 5987), quoted boundaries, an empty file", async () => {
    const body = Buffer.from(`preamble\r\n--"b"\r\nContent-Disposition: form-data; name="file"; filename="fallback"; filename*=UTF-8''%E2%82%AC.txt\r\n\r\n\r\n--"b"--\r\nepilogue`.replace(/"b"/g, "b"));
    const r = await parse(body, boundaryOf('multipart/form-data; boundary="b"'), 3);
    expect((r.file?.info as { filename: string }).filename).toBe("€.txt");
    expect(r.file?.bytes.length).toBe(0);
  });

  it("refuses malformed bodies: no closing boundary, two files, a file past the limit (413), no boundary", async () => {
    const b = "XX";
    const part = (name: string, extra = "") => `--${b}\r\nContent-Disposition: form-data; name="${name}"${extra}\r\n\r\nabc\r\n`;
    await expect(parse(Buffer.from(part("file", '; filename="a"')), b, 5)).rejects.toMatchObject({ status: 400 });
    await expect(parse(Buffer.from(part("file", '; filename="a"') + part("file", '; filename="b"') + `--${b}--`), b, 5)).rejects.toMatchObject({ status: 400 });
    await expect(parse(Buffer.from(part("other", '; filename="a"') + `--${b}--`), b, 5)).rejects.toMatchObject({ status: 400 });
    await expect(parse(Buffer.from(part("file", '; filename="a"') + `--${b}--`), b, 5, 2)).rejects.toMatchObject({ status: 413, code: "payload_too_large" });
    expect(() => boundaryOf("multipart/form-data")).toThrow(ConsoleHttpError);
    expect(() => boundaryOf("application/json")).toThrow(ConsoleHttpError);
  });
});

describe("console read model", () => {
  it("skips name claims' commits without decoding them, and no other commit, whatever a file is named", () => {
    const ctx = { causationId: "c", correlationId: "c" };
    const commit = (aggregate: string, ...events: NewEvent[]) => encodeCommit({ events: events.map((e) => envelope(aggregate, e, ctx)) });
    const wants = consoleProjection.wants!;
    expect(wants(commit(`${AGG.claim}.f-1-abc`, ev(EV.claimHeld, { owner_id: "o", name: "n" })))).toBe(false);
    expect(wants(commit(`${AGG.claim}.f-1-abc`, ev(EV.claimReleased, { owner_id: "o" })))).toBe(false);
    const sly = '"aggregate":"console.claim.x"';
    expect(wants(commit(`${AGG.upload}.u1`, ev(EV.uploadQueued, { file_id: "u1", name: sly }), ev(EV.uploadStarted, {})))).toBe(true);
    expect(wants(commit(`${AGG.bucket}.b1`, ev(EV.bucketActivated, {})))).toBe(true);
  });
});

describe("HTTP contract validation", () => {
  it("names, metadata, cursors, list queries, sponsor and update bodies", () => {
    expect(() => validateBucketName("")).toThrow(ConsoleHttpError);
    expect(() => validateBucketName("x".repeat(101))).toThrow(ConsoleHttpError);
    expect(validateBucketName("😀".repeat(100))).toBe("😀".repeat(100));
    expect(() => validateFileName("a\u0000b")).toThrow(ConsoleHttpError);
    expect(() => parseFileMetadata("x".repeat(9000))).toThrow(ConsoleHttpError);
    expect(parseFileMetadata(undefined)).toEqual({});
    const c = encodeCursor({ s: "date", o: "desc", v: "2026-01-01T00:00:00.000Z", id: "00000000-0000-4000-8000-000000000000" });
    expect(decodeCursor(c, "date", "desc")?.v).toBe("2026-01-01T00:00:00.000Z");
    expect(() => decodeCursor(c, "name", "desc")).toThrow(ConsoleHttpError);
    expect(parseBucketListQuery(new URLSearchParams(""))).toMatchObject({ limit: 100, sortField: "date", sortOrder: "desc", q: null, visibility: null });
    expect(() => parseSponsor({ kind: "grant_bucket_access", groupIds: [], recipientAddress: "0x" + "1".repeat(64), scope: "read" })).toThrow(ConsoleHttpError);
    expect(parseUpdateBucket({ name: "n", encryptionPolicyId: null })).toEqual({ name: "n", encryptionPolicyId: null });
    expect(parseUpdateBucket({ name: "n", sealPolicyId: "0x" + "A".repeat(64) }).encryptionPolicyId).toBe("0x" + "a".repeat(64));
  });
});

describe("console limits from the environment", () => {
  it("parses the CONSOLE_* variables; unset or empty ones leave the console's defaults", () => {
    expect(consoleLimitsFromEnv({})).toEqual({});
    expect(consoleLimitsFromEnv({ CONSOLE_MAX_UPLOAD_BYTES: "", CONSOLE_UPLOADS_PER_MINUTE: "  " })).toEqual({});
    expect(
      consoleLimitsFromEnv({ CONSOLE_MAX_UPLOAD_BYTES: "1048576", CONSOLE_UPLOADS_PER_MINUTE: "0", CONSOLE_UPLOAD_STATUS_RETENTION_SECS: " 120 ", CONSOLE_SPONSOR_TTL_SECS: "600" }),
    ).toEqual({ maxUploadBytes: 1_048_576, uploadsPerMinute: 0, uploadStatusRetentionMs: 120_000, sponsorTtlMs: 600_000 });
    expect(loadConfig({ CONSOLE_UPLOADS_PER_MINUTE: "30" }).consoleLimits).toEqual({ uploadsPerMinute: 30 });
  });

  it("refuses malformed or out-of-range values with an error naming the variable and what it accepts", () => {
    const bad: [string, string][] = [
      ["CONSOLE_MAX_UPLOAD_BYTES", "100MiB"],
      ["CONSOLE_MAX_UPLOAD_BYTES", "0"],
      ["CONSOLE_MAX_UPLOAD_BYTES", "1.5"],
      ["CONSOLE_MAX_UPLOAD_BYTES", "1e9"],
      ["CONSOLE_UPLOADS_PER_MINUTE", "-1"],
      ["CONSOLE_UPLOADS_PER_MINUTE", "lots"],
      ["CONSOLE_UPLOAD_STATUS_RETENTION_SECS", "60s"],
      ["CONSOLE_UPLOAD_STATUS_RETENTION_SECS", "99999999999999999999"],
      ["CONSOLE_SPONSOR_TTL_SECS", "0"],
      ["CONSOLE_SPONSOR_TTL_SECS", "601"],
    ];
    for (const [name, value] of bad) {
      expect(() => consoleLimitsFromEnv({ [name]: value }), `${name}=${value}`).toThrow(ConfigError);
      expect(() => consoleLimitsFromEnv({ [name]: value })).toThrow(new RegExp(`^${name} must be .*an integer from .*; got "${value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}"$`));
      // loadConfig refuses it as well: `memrelay start` stops before starting anything
      expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    }
  });
});

describe("reading back what the console wrote", () => {
  const event = (type: string): EventEnvelope => ({ type, version: 1, id: "e1", aggregate: "console.upload.f", occurred_at: "t", correlation_id: "c", causation_id: "c", data: {} });
  it("an event is the console's when its type is in the catalogue", () => {
    expect(isConsoleEvent(event(EV.uploadQueued))).toBe(true);
    expect(isConsoleEvent(event("job.indexed"))).toBe(false);
    expect(isConsoleEvent(event("toString"))).toBe(false);
  });
  it("a command on the work queue is the console's when its type is in the catalogue and it carries data", () => {
    const command = { type: CMD.uploadStart, version: 1, id: "c1", aggregate: "console.upload.f", issued_at: "t", correlation_id: "c", data: { file_id: "f" } };
    expect(isConsoleCommand(command)).toBe(true);
    expect(isConsoleCommand({ ...command, type: "job.remember" })).toBe(false);
    expect(isConsoleCommand({ ...command, type: "constructor" })).toBe(false);
    expect(isConsoleCommand({ ...command, data: null })).toBe(false);
    expect(isConsoleCommand({ type: CMD.uploadStart })).toBe(false);
    expect(isConsoleCommand("upload")).toBe(false);
    expect(isConsoleCommand(null)).toBe(false);
  });
});
