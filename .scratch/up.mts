import { startConsoleTestStack } from "/work/main/console/testkit.ts";
import { signUp, mintKey } from "/work/main/console/directory.ts";
import { ConsoleClient } from "/work/main/console/client.ts";
import { BlobStoreStorage } from "/work/main/console/storage.ts";
import { PassThrough, Readable } from "node:stream";
import { request } from "undici";
const s = await startConsoleTestStack({ limits: { uploadsPerMinute: 0 } });
try {
  const dir = s.console.directory;
  const alice = await signUp(dir, { email: "alice@example.com", tier: "enterprise" });
  const rw = await mintKey(dir, { userId: alice.user.user_id, role: "read_write" });
  const c = new ConsoleClient(s.console.url, rw.secret);
  const b = await c.createPrivateBucket(alice.space.space_id, "b", rw.service_key!.secret_key);
  const sb = (await c.bucket(b.bucket_id)).storage_bucket_name;
  const st = new BlobStoreStorage(s.storage);
  const payload = Buffer.alloc(1 << 20, 3);
  for (;;) { try { await c.upload(b.bucket_id, { bytes: Buffer.from("w"), filename: "w" }); break; } catch { await new Promise((r) => setTimeout(r, 30)); } }
  for (let round = 0; round < 3; round++) {
    let t = performance.now();
    for (let i = 0; i < 10; i++) { const body = Buffer.from(payload); body.writeDoubleLE(Math.random(), 0); const r = await request(`${s.storage.url}/api/v1/buckets/${sb}/blobs/d${round}-${i}`, { method: "PUT", headers: { authorization: `Bearer ${s.storage.apiKey}` }, body }); await r.body.dump(); }
    console.log("direct buffer", ((performance.now() - t) / 10).toFixed(1));
    t = performance.now();
    for (let i = 0; i < 10; i++) { const body = Buffer.from(payload); body.writeDoubleLE(Math.random(), 0); const p = new PassThrough(); p.end(body); await st.put(sb, `p${round}-${i}`, p, "application/octet-stream"); }
    console.log("storage.put stream", ((performance.now() - t) / 10).toFixed(1));
    t = performance.now();
    for (let i = 0; i < 10; i++) { const body = Buffer.from(payload); body.writeDoubleLE(Math.random(), 0); await c.upload(b.bucket_id, { bytes: body, filename: `c${round}-${i}` }); }
    console.log("console upload", ((performance.now() - t) / 10).toFixed(1));
    t = performance.now();
    for (let i = 0; i < 10; i++) await c.buckets(alice.space.space_id);
    console.log("list buckets", ((performance.now() - t) / 10).toFixed(1));
  }
  await c.close(); await st.close();
} finally { await s.teardown(); }
