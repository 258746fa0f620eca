import { startConsoleTestStack } from "/work/main/console/testkit.ts";
import { signUp, mintKey } from "/work/main/console/directory.ts";
import { ConsoleClient, signTransactionBytes } from "/work/main/console/client.ts";
const s = await startConsoleTestStack();
try {
  const dir = s.console.directory;
  const alice = await signUp(dir, { email: "alice@example.com", name: "Alice" });
  const rw = await mintKey(dir, { userId: alice.user.user_id, role: "read_write" });
  const c = new ConsoleClient(s.console.url, rw.secret);
  const spaces = await c.spaces();
  const r = await c.reserveBucket(spaces[0].id, "b");
  await c.finalize(r.bucket_id, await signTransactionBytes(r.bytes, rw.service_key!.secret_key));
  for (let i = 0; i < 5; i++) {
    const up = await c.uploadWithRetry(r.bucket_id, () => ({ bytes: Buffer.alloc(1 << 20, i), filename: `a${i}.bin` }), { everyMs: 20 });
    for (let k = 0; k < 6; k++) { const st = await c.status(r.bucket_id, up.id); console.log(i, k, st.status, JSON.stringify(st.body)); }
  }
  await c.close();
} finally { await s.teardown(); }
