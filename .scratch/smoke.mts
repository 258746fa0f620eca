import { startConsoleTestStack } from "/work/main/console/testkit.ts";
import { signUp, mintKey } from "/work/main/console/directory.ts";
import { ConsoleClient, signTransactionBytes } from "/work/main/console/client.ts";

const t0 = Date.now();
const s = await startConsoleTestStack();
console.log("stack up", Date.now() - t0);
try {
  const dir = s.console.directory;
  const alice = await signUp(dir, { email: "alice@example.com", name: "Alice" });
  console.log("signed up", Date.now() - t0);
  const rw = await mintKey(dir, { userId: alice.user.user_id, role: "read_write" });
  console.log("minted", Date.now() - t0, rw.prefix);
  const c = new ConsoleClient(s.console.url, rw.secret);
  const spaces = await c.spaces();
  console.log("spaces", spaces);
  const r = await c.reserveBucket(spaces[0].id, "photos");
  console.log("reserved", r.bucket_id, r.digest, Date.now() - t0);
  const sig = await signTransactionBytes(r.bytes, rw.service_key!.secret_key);
  const f = await c.finalize(r.bucket_id, sig);
  console.log("finalized", f, Date.now() - t0);
  const up = await c.uploadWithRetry(r.bucket_id, () => ({ bytes: Buffer.from("hello ciphertext"), filename: "a.bin", metadata: { k: 1 } }), { everyMs: 50, onRetry: () => console.log("retry mirror") });
  console.log("uploaded", up, Date.now() - t0);
  const seen: string[] = [];
  const done = await c.waitForUpload(r.bucket_id, up.id, { seen });
  console.log("done", done, seen, Date.now() - t0);
  const d = await c.download(r.bucket_id, up.id);
  console.log("download", d.status, d.headers["content-type"], d.headers["content-disposition"], d.raw.toString());
  console.log("list", (await c.files("spaces", spaces[0].id, { q: "A." })).data.length);
  await c.deleteFile(r.bucket_id, up.id);
  console.log("file after delete", (await c.file(r.bucket_id, up.id)).status);
  const del = await c.deleteBucket(r.bucket_id);
  console.log("bucket delete", del.status, del.headers["x-deleted-id"], Date.now() - t0);
  await c.close();
} catch (e) {
  console.error("FAILED", e);
} finally {
  await s.teardown();
}
