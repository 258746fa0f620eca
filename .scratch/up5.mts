import { startConsoleTestStack } from "/work/main/console/testkit.ts";
import { signUp, mintKey } from "/work/main/console/directory.ts";
import { ConsoleClient } from "/work/main/console/client.ts";
import { Agent } from "undici";
const s = await startConsoleTestStack({ limits: { uploadsPerMinute: 0 } });
try {
  const dir = s.console.directory;
  const alice = await signUp(dir, { email: "alice@example.com", tier: "enterprise" });
  const rw = await mintKey(dir, { userId: alice.user.user_id, role: "read_write" });
  const agent = new Agent({ connections: 16 });
  const c = new ConsoleClient(s.console.url, rw.secret, agent);
  const b = await c.createPrivateBucket(alice.space.space_id, "b", rw.service_key!.secret_key);
  const payload = Buffer.alloc(1 << 20, 3);
  for (;;) { try { await c.upload(b.bucket_id, { bytes: Buffer.from("w"), filename: "w" }); break; } catch { await new Promise((r) => setTimeout(r, 30)); } }
  let n = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: 4 }, async () => {
    for (let i = 0; i < 25; i++) { const body = Buffer.from(payload); body.writeDoubleLE(Math.random(), 0); await c.upload(b.bucket_id, { bytes: body, filename: `c${n++}` }); }
  }));
  console.log("MiB/s", (100 / ((performance.now() - t0) / 1000)).toFixed(1));
  await c.close();
} finally { await s.teardown(); }
