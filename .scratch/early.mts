import { startConsoleTestStack } from "/work/main/console/testkit.ts";
import { signUp, mintKey } from "/work/main/console/directory.ts";
import { ConsoleClient } from "/work/main/console/client.ts";
import { Agent } from "undici";
const s = await startConsoleTestStack();
try {
  const dir = s.console.directory;
  const alice = await signUp(dir, { email: "alice@example.com", name: "Alice" });
  const ro = await mintKey(dir, { userId: alice.user.user_id, role: "read_only" });
  const c = new ConsoleClient(s.console.url, ro.secret, new Agent({ connections: 1 }));
  const spaces = await c.spaces();
  for (const size of [1000, 100_000, 1 << 20, 8 << 20]) {
    for (let i = 0; i < 3; i++) {
      try { await c.upload("00000000-0000-4000-8000-000000000000", { bytes: Buffer.alloc(size) }); } catch (e: any) { console.log(size, "upload ->", e.status ?? e.code); }
      try { const r = await c.spaces(); console.log(size, "next ok", r.length); } catch (e: any) { console.log(size, "next ->", e.code ?? e.message); }
    }
  }
  await c.close();
} finally { await s.teardown(); }
