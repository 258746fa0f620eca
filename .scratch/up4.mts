import { startConsoleTestStack } from "/work/main/console/testkit.ts";
import { signUp, mintKey } from "/work/main/console/directory.ts";
import { ConsoleClient } from "/work/main/console/client.ts";
import { Agent, request } from "undici";
const s = await startConsoleTestStack({ limits: { uploadsPerMinute: 0 } });
try {
  const dir = s.console.directory;
  const alice = await signUp(dir, { email: "alice@example.com", tier: "enterprise" });
  const rw = await mintKey(dir, { userId: alice.user.user_id, role: "read_write" });
  const agent = new Agent({ connections: 16 });
  const c = new ConsoleClient(s.console.url, rw.secret, agent);
  const b = await c.createPrivateBucket(alice.space.space_id, "b", rw.service_key!.secret_key);
  const sb = (await c.bucket(b.bucket_id)).storage_bucket_name;
  const payload = Buffer.alloc(1 << 20, 3);
  for (;;) { try { await c.upload(b.bucket_id, { bytes: Buffer.from("w"), filename: "w" }); break; } catch { await new Promise((r) => setTimeout(r, 30)); } }
  let n = 0;
  if (process.env.NOACTORS) for (const h of s.console.hosts) if (h.consumerName.endsWith('upload')) await h.stop();
  for (const conc of [1, 4]) {
    for (const mode of ["direct", "console"]) {
      const lat: number[] = [];
      const t0 = performance.now();
      await Promise.all(Array.from({ length: conc }, async () => {
        for (let i = 0; i < 12; i++) {
          const body = Buffer.from(payload); body.writeDoubleLE(Math.random(), 0);
          const t = performance.now();
          if (mode === "direct") { const r = await request(`${s.storage.url}/api/v1/buckets/${sb}/blobs/d${n++}`, { method: "PUT", dispatcher: agent, headers: { authorization: `Bearer ${s.storage.apiKey}` }, body }); await r.body.dump(); }
          else await c.upload(b.bucket_id, { bytes: body, filename: `c${n++}` });
          lat.push(performance.now() - t);
        }
      }));
      lat.sort((a, b) => a - b);
      console.log(conc, mode, "MiB/s", (lat.length / ((performance.now() - t0) / 1000)).toFixed(1), "p50", lat[lat.length >> 1].toFixed(1), "max", lat[lat.length - 1].toFixed(1));
    }
  }
  await c.close();
} finally { await s.teardown(); }
