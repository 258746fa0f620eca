// The console API (spec/console.md), files: the upload job and its status, failures, name conflicts, invalid and
// oversized uploads, quota and rate limits, downloads and deletes. Over HTTP against a console on its real backbone,
// one stack for the file (test/support/console-api-suite.ts).
import { describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { request } from "undici";
import { createConnection } from "node:net";
import { ConsoleApiError, multipartBody } from "../client/console-client.ts";
import { ConsoleActorHost } from "../actors/console/host.ts";
import { uploadActor } from "../actors/console/upload.actor.ts";
import { claimId } from "../actors/console/log.ts";
import { AGG, EV } from "../schemas/console/events.ts";
import { BlobStoreStorage } from "../adapters/file-storage/blobstore-http.ts";
import { MiB, cleanups, expectError, privateBucket, s, uploadOk, useConsoleApiSuite, user } from "./support/console-api-suite.ts";

useConsoleApiSuite();

/** The host running this file's upload jobs: held (stopped) by holdUploads, replaced by resumeUploads. */
let uploadHost: { stop(): Promise<void> } | undefined;
async function holdUploads() {
  await (uploadHost ?? s.console.hosts.find((h) => h.consumerName.endsWith("console_upload"))!).stop();
}
async function resumeUploads() {
  const host = new ConsoleActorHost(s.log, uploadActor(s.console.actorPorts), s.logger, { concurrency: 4 });
  await host.start();
  uploadHost = host;
  cleanups.push(() => host.stop());
}

/** One request written by hand (a declared length the client never sends), its response read back. */
function rawSocket(text: string): Promise<{ status: number; body: any }> {
  const url = new URL(s.console.url);
  return new Promise((resolve, reject) => {
    const sock = createConnection({ host: url.hostname, port: Number(url.port) }, () => sock.write(text));
    let buf = Buffer.alloc(0);
    sock.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = buf.subarray(0, end).toString();
      const len = Number(/content-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (buf.length < end + 4 + len) return;
      sock.destroy();
      resolve({ status: Number(head.split(" ")[1]), body: JSON.parse(buf.subarray(end + 4, end + 4 + len).toString()) });
    });
    sock.on("error", reject);
  });
}

describe("files (spec: Endpoints, States: upload and file, Limits)", () => {
  it("upload → 202 summary → status queued/active/completed with progress → 404 once the job left the queue; the file gives the final status", async () => {
    const u = await user();
    const b = await privateBucket(u);
    const accepted = await u.c.uploadWithRetry(b, () => ({ bytes: Buffer.from("payload"), filename: "p.txt", contentType: "text/plain", metadata: { a: [1, 2] } }), { everyMs: 20 });
    expect(accepted).toMatchObject({ bucket_id: b, name: "p.txt", size: 7, mime_type: "text/plain", status: "uploading", is_private: true, metadata: { a: [1, 2] } });
    expect(accepted.blob_id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const first = await u.c.status(b, accepted.id);
    expect(first.status).toBe(200);
    expect(["queued", "active", "completed"]).toContain(first.body.data.state);
    const done = await u.c.waitForUpload(b, accepted.id);
    expect(done.status).toBe("completed");
    const st = await u.c.status(b, accepted.id);
    expect(st.body.data).toEqual({ state: "completed", progress: 1 });
    // a finished job keeps no actor snapshot (its status is read from the log and the read model)
    const snap = await s.log.snapshots.get(`${AGG.upload}.${accepted.id}`);
    expect(snap?.value?.length ?? 0).toBe(0);
    expect(done.storage_object_id).toBe(`${(await u.c.bucket(b)).storage_bucket_name}/${accepted.id}`);
    await new Promise((r) => setTimeout(r, 1_600)); // the status retention window of this stack
    const left = await u.c.status(b, accepted.id);
    expect(left.status).toBe(404);
    expect((await u.c.file(b, accepted.id)).status).toBe("completed");
    await expectError(u.c.call("GET", `/api/v1/buckets/${b}/files/${randomUUID()}/status`), 404);
  });

  it("a failed upload reports failed with data.error {code, message}; its bytes are removed and its name freed", async () => {
    const u = await user({ storageCap: 1_000 });
    const b = await privateBucket(u);
    await uploadOk(u, b, { bytes: Buffer.from("warm"), filename: "warm" });
    // Hold the upload jobs on the queue: an upload whose job has not run is not yet counted in flight, so two of
    // 600 bytes are both admitted. The second is held open until the first completed; its job then finds the quota
    // taken (the job's own check).
    await holdUploads();
    const first = await u.c.upload(b, { bytes: Buffer.alloc(600, 1), filename: "first.bin" });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const body = Readable.from((async function* () {
      yield Buffer.alloc(300, 2);
      await held;
      yield Buffer.alloc(300, 2);
    })());
    const second = u.c.upload(b, { stream: body, size: 600, filename: "gone.bin" });
    await new Promise((r) => setTimeout(r, 300)); // its admission (at the first bytes) before the first job runs
    await resumeUploads();
    const storage = new BlobStoreStorage(s.storage);
    cleanups.push(() => storage.close());
    expect((await u.c.waitForUpload(b, first.id)).status).toBe("completed");
    release();
    const accepted = await second;
    const final = await u.c.waitForUpload(b, accepted.id);
    expect(final.status).toBe("failed");
    const st = await u.c.status(b, accepted.id);
    expect(st.body.data).toMatchObject({ state: "failed", error: { code: "quota_exceeded" } });
    expect(typeof st.body.data.error.message).toBe("string");
    // failed is read once the upload's cleanup removed the bytes and released the name
    expect(await storage.stat((await u.c.bucket(b)).storage_bucket_name, accepted.id)).toBeNull();
    await expectError(u.c.download(b, accepted.id), 409);
    expect((await u.c.spaces())[0].storage_used).toBe(604);
    // a failed file is deleted at once; its name can be used again
    expect((await u.c.deleteFile(b, accepted.id)).status).toBe(204);
    expect((await u.c.file(b, accepted.id)).status).toBe("deleted");
    await uploadOk(u, b, { bytes: Buffer.from("back"), filename: "gone.bin" });
  });

  it("an upload whose bucket was deleted before its job ran fails bucket_deleted, its name released", async () => {
    const u = await user();
    const b = await privateBucket(u);
    await uploadOk(u, b, { bytes: Buffer.from("warm"), filename: "warm" });
    expect((await u.c.deleteFile(b, (await u.c.files("buckets", b)).data[0].id)).status).toBe(204);
    await holdUploads();
    const accepted = await u.c.upload(b, { bytes: Buffer.from("orphan"), filename: "orphan.bin" });
    // the read model does not have the file yet (its job has not run), so the bucket counts as empty
    expect((await u.c.deleteBucket(b)).status).toBe(204);
    await resumeUploads();
    let row: { status: string; upload_error: { code: string } | null } | undefined;
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 20))) {
      row = (await s.db.query("SELECT status, upload_error FROM console_files WHERE file_id = $1", [accepted.id])).rows[0];
      if (row && row.status !== "uploading") break;
    }
    expect(row).toMatchObject({ status: "failed", upload_error: { code: "bucket_deleted" } });
    const claim = await s.console.directory.clog.lastEvent(AGG.claim, claimId("file", b, "orphan.bin"));
    expect(claim?.type).toBe(EV.claimReleased);
  });

  it("409 on a duplicate file name; the name is free again once the file is deleted", async () => {
    const u = await user();
    const b = await privateBucket(u);
    const f = await uploadOk(u, b, { bytes: Buffer.from("1"), filename: "Report.pdf" });
    await expectError(u.c.upload(b, { bytes: Buffer.from("2"), filename: "report.PDF" }), 409);
    await expectError(u.c.upload(b, { bytes: Buffer.from("2"), filename: "x", name: "REPORT.pdf" }), 409);
    expect((await u.c.files("buckets", b)).data).toHaveLength(1);
    // a name field after the file part decides the name (the filename's early claim is given back)
    const late = (filename: string, name: string) =>
      `--B\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: text/plain\r\n\r\nlate\r\n` +
      `--B\r\nContent-Disposition: form-data; name="name"\r\n\r\n${name}\r\n--B--\r\n`;
    const post = (body: string) => u.c.call("POST", `/api/v1/buckets/${b}/files`, { body, headers: { "content-type": "multipart/form-data; boundary=B" } });
    const renamed = (await post(late("Report.pdf", "second.txt"))).body.data;
    expect(renamed).toMatchObject({ name: "second.txt", mime_type: "text/plain", size: 4 });
    await expectError(post(late("fresh.txt", "report.pdf")), 409);
    await u.c.waitForUpload(b, renamed.id);
    await uploadOk(u, b, { bytes: Buffer.from("3"), filename: "fresh.txt" });
    await u.c.deleteFile(b, f.id);
    const deadline = Date.now() + 20_000;
    while ((await u.c.file(b, f.id)).status !== "deleted" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await uploadOk(u, b, { bytes: Buffer.from("3"), filename: "Report.pdf" });
  });

  it("400 bad_request on invalid uploads: no file, not multipart, name over 255, metadata over 8 KiB or not an object", async () => {
    const u = await user();
    const b = await privateBucket(u);
    await uploadOk(u, b, { bytes: Buffer.from("warm"), filename: "w" });
    await expectError(u.c.upload(b, { bytes: Buffer.from("x"), filename: "x", name: "n".repeat(256) }), 400, "bad_request");
    await expectError(u.c.upload(b, { bytes: Buffer.from("x"), filename: "x", metadata: { big: "m".repeat(8 * 1024) } }), 400, "bad_request");
    await expectError(u.c.upload(b, { bytes: Buffer.from("x"), filename: "x", metadata: "[1,2]" }), 400, "bad_request");
    await expectError(u.c.upload(b, { bytes: Buffer.from("x"), filename: "x", metadata: "{oops" }), 400, "bad_request");
    await expectError(u.c.call("POST", `/api/v1/buckets/${b}/files`, { body: "plain", headers: { "content-type": "text/plain" } }), 400, "bad_request");
    const noFile = "--XyZ\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nabc\r\n--XyZ--\r\n";
    await expectError(u.c.call("POST", `/api/v1/buckets/${b}/files`, { body: noFile, headers: { "content-type": "multipart/form-data; boundary=XyZ" } }), 400, "bad_request");
    const truncated = "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nabc";
    await expectError(u.c.call("POST", `/api/v1/buckets/${b}/files`, { body: truncated, headers: { "content-type": "multipart/form-data; boundary=XyZ" } }), 400, "bad_request");
    // 255 characters and exactly 8 KiB of metadata are fine
    const meta = JSON.stringify({ m: "x".repeat(8 * 1024 - 8) });
    expect(Buffer.byteLength(meta)).toBe(8 * 1024);
    const ok = await uploadOk(u, b, { bytes: Buffer.from("x"), filename: "x", name: "é".repeat(255), metadata: meta });
    expect(ok.name).toBe("é".repeat(255));
    // nothing of the refused uploads was kept
    expect((await u.c.files("buckets", b)).data).toHaveLength(2);
  });

  it("413 payload_too_large past 100 MiB, declared or streamed, without buffering", async () => {
    const u = await user();
    const b = await privateBucket(u);
    await uploadOk(u, b, { bytes: Buffer.from("warm"), filename: "w" });
    // declared too large: refused before any byte is read
    const declared = await rawSocket(`POST /api/v1/buckets/${b}/files HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${u.rw.secret}\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: ${101 * MiB}\r\n\r\n--x\r\n`);
    expect(declared.status).toBe(413);
    expect(declared.body).toMatchObject({ code: "payload_too_large", limit: 100 * MiB });
    // streamed without a length: counted while it flows, refused at the first byte past the limit
    const chunk = Buffer.alloc(MiB, 7);
    let sent = 0;
    const total = 100 * MiB + 1;
    const source = async function* () {
      while (sent < total) {
        const n = Math.min(chunk.length, total - sent);
        sent += n;
        yield n === chunk.length ? chunk : chunk.subarray(0, n);
      }
    };
    const rssBefore = process.memoryUsage().rss;
    const mp = multipartBody({ stream: source(), filename: "huge.bin" });
    const res = await request(`${s.console.url}/api/v1/buckets/${b}/files`, { method: "POST", headers: { authorization: `Bearer ${u.rw.secret}`, "content-type": mp.contentType }, body: mp.body }).catch((e) => e);
    if (res instanceof Error) {
      // the server may close the connection while the client still sends: then it must not have accepted anything
      expect(String(res.message)).toMatch(/ECONNRESET|EPIPE|other side closed|socket/i);
    } else {
      expect(res.statusCode).toBe(413);
      expect(await res.body.json()).toMatchObject({ code: "payload_too_large" });
    }
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(90 * MiB);
    expect((await u.c.files("buckets", b)).data).toHaveLength(1);
  }, 120_000);

  it("422 quota_exceeded when the space's storage would be exceeded", async () => {
    const u = await user({ storageCap: 1_000 });
    const b = await privateBucket(u);
    await uploadOk(u, b, { bytes: Buffer.alloc(600), filename: "first" });
    await expectError(u.c.upload(b, { bytes: Buffer.alloc(600), filename: "second" }), 422, "quota_exceeded");
    // without a declared length the check happens once the bytes are counted
    const mp = multipartBody({ stream: Readable.from([Buffer.alloc(600)]), filename: "third" });
    const r = await request(`${s.console.url}/api/v1/buckets/${b}/files`, { method: "POST", headers: { authorization: `Bearer ${u.rw.secret}`, "content-type": mp.contentType }, body: mp.body });
    expect(r.statusCode).toBe(422);
    expect(await r.body.json()).toMatchObject({ code: "quota_exceeded" });
    expect((await u.c.spaces())[0].storage_used).toBe(600);
    expect((await u.c.files("buckets", b)).data).toHaveLength(1);
  });

  it("429 when uploads exceed the key's rate", async () => {
    const u = await user();
    const b = await privateBucket(u);
    await uploadOk(u, b, { bytes: Buffer.from("0"), filename: "0" });
    let limited: ConsoleApiError | undefined;
    for (let i = 1; i <= 40 && !limited; i++) {
      try {
        await u.c.upload(b, { bytes: Buffer.from(String(i)), filename: `f${i}` });
      } catch (err) {
        limited = err as ConsoleApiError;
      }
    }
    expect(limited?.status).toBe(429);
    expect(limited?.code).toBe("rate_limited");
    expect(Number(limited?.headers["retry-after"])).toBeGreaterThan(0);
  });

  it("download streams the bytes with Content-Type and Content-Disposition; 423 while deleting or deleted; 500 when the blob cannot be streamed", async () => {
    const u = await user();
    const b = await privateBucket(u);
    const bytes = Buffer.alloc(3 * MiB + 17, 9);
    const f = await uploadOk(u, b, { bytes, filename: "résumé final.pdf", contentType: "application/pdf" });
    const dl = await u.c.download(b, f.id);
    expect(dl.status).toBe(200);
    expect(dl.headers["content-type"]).toBe("application/pdf");
    expect(dl.headers["content-length"]).toBe(String(bytes.length));
    expect(dl.headers["content-disposition"]).toBe(`attachment; filename="r_sum_ final.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9%20final.pdf`);
    expect(dl.raw.equals(bytes)).toBe(true);
    // the bytes vanish behind the console's back: 500, not a hang or a truncated 200
    const g = await uploadOk(u, b, { bytes: Buffer.from("fragile"), filename: "fragile" });
    const storage = new BlobStoreStorage(s.storage);
    cleanups.push(() => storage.close());
    await storage.remove((await u.c.bucket(b)).storage_bucket_name, g.id);
    await expectError(u.c.download(b, g.id), 500, "blob_unavailable");
    // deleting and deleted: 423
    await u.c.deleteFile(b, f.id);
    await expectError(u.c.download(b, f.id), 423);
    const deadline = Date.now() + 20_000;
    while ((await u.c.file(b, f.id)).status !== "deleted" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await expectError(u.c.download(b, f.id), 423);
  });

  it("DELETE answers 204 at once, repeated deletes are deduplicated, a worker removes the blob and marks the file deleted", async () => {
    const u = await user();
    const b = await privateBucket(u);
    const f = await uploadOk(u, b, { bytes: Buffer.from("to delete"), filename: "d" });
    const results = await Promise.all([1, 2, 3, 4].map(() => u.c.deleteFile(b, f.id)));
    expect(results.map((r) => r.status)).toEqual([204, 204, 204, 204]);
    const deadline = Date.now() + 20_000;
    while ((await u.c.file(b, f.id)).status !== "deleted" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const final = await u.c.file(b, f.id);
    expect(final.status).toBe("deleted");
    expect(final.deleted_at).toEqual(expect.any(String));
    const { events } = await s.console.directory.clog.store.load(`${AGG.file}.${f.id}`);
    expect(events.filter((e) => e.event.type === EV.fileDeleteRequested)).toHaveLength(1);
    expect(events.filter((e) => e.event.type === EV.fileDeleted)).toHaveLength(1);
    const storage = new BlobStoreStorage(s.storage);
    cleanups.push(() => storage.close());
    expect(await storage.stat((await u.c.bucket(b)).storage_bucket_name, f.id)).toBeNull();
    expect((await u.c.spaces())[0].storage_used).toBe(0);
  });

  it("bucket delete needs confirm=true and an empty bucket; 204 with X-Deleted-Id", async () => {
    const u = await user();
    const b = await privateBucket(u, "to-go");
    const f = await uploadOk(u, b, { bytes: Buffer.from("x"), filename: "x" });
    await expectError(u.c.deleteBucket(b, false), 400, "bad_request");
    await expectError(u.c.call("DELETE", `/api/v1/buckets/${b}?confirm=yes`), 400, "bad_request");
    await expectError(u.c.deleteBucket(b), 400, "bad_request");
    await u.c.deleteFile(b, f.id);
    const r = await u.c.deleteBucket(b);
    expect(r.status).toBe(204);
    expect(r.headers["x-deleted-id"]).toBe(b);
    await expectError(u.c.bucket(b), 404);
    expect((await u.c.buckets(u.spaceId)).buckets).toHaveLength(0);
    // the name is free again; a pending bucket can be deleted too
    const again = await u.c.reserveBucket(u.spaceId, "to-go");
    expect((await u.c.deleteBucket(again.bucket_id)).status).toBe(204);
  });
});
