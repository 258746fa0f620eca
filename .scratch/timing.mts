import { startConsoleTestStack } from "/work/main/console/testkit.ts";
import { signUp, mintKey } from "/work/main/console/directory.ts";
import { ConsoleClient, signTransactionBytes } from "/work/main/console/client.ts";
const s = await startConsoleTestStack();
try {
  const dir = s.console.directory;
  const alice = await signUp(dir, { email: "alice@example.com", name: "Alice" });
  for (let i = 0; i < 4; i++) { const t = performance.now(); await mintKey(dir, { userId: alice.user.user_id, role: "read_write" }); console.log("mint", (performance.now() - t).toFixed(1)); }
  const rw = await mintKey(dir, { userId: alice.user.user_id, role: "read_write" });
  const c = new ConsoleClient(s.console.url, rw.secret);
  const spaces = await c.spaces();
  for (let i = 0; i < 4; i++) {
    let t = performance.now();
    const r = await c.reserveBucket(spaces[0].id, "b" + i);
    console.log("reserve", (performance.now() - t).toFixed(1));
    t = performance.now();
    await c.finalize(r.bucket_id, await signTransactionBytes(r.bytes, rw.service_key!.secret_key));
    console.log("finalize", (performance.now() - t).toFixed(1));
    t = performance.now();
    const up = await c.uploadWithRetry(r.bucket_id, () => ({ bytes: Buffer.alloc(1 << 20, i), filename: "a.bin" }), { everyMs: 20, onRetry: () => console.log("retry") });
    console.log("upload", (performance.now() - t).toFixed(1));
    t = performance.now();
    await c.waitForUpload(r.bucket_id, up.id, { everyMs: 5 });
    console.log("complete", (performance.now() - t).toFixed(1));
  }
  await c.close();
} finally { await s.teardown(); }
