import { startConsoleTestStack } from "/work/main/console/testkit.ts";
import { signUp, mintKey } from "/work/main/console/directory.ts";
import { ConsoleClient } from "/work/main/console/client.ts";
import { consoleCommand } from "/work/main/cli/console.ts";
const s = await startConsoleTestStack();
try {
  const dir = s.console.directory;
  const alice = await signUp(dir, { email: "alice@example.com", name: "Alice" });
  const rw = await mintKey(dir, { userId: alice.user.user_id, role: "read_write" });
  const c = new ConsoleClient(s.console.url, rw.secret);
  const out: string[] = [];
  await consoleCommand(["bucket", "create-public", "--space", alice.space.space_id, "--name", "pub", "--json"], { NATS_URL: s.nats.url, DATABASE_URL: s.database.url }, { out: (l) => out.push(l), err: (l) => out.push(l) });
  const pub = JSON.parse(out[0]);
  const f1 = await c.upload(pub.bucket_id, { bytes: Buffer.alloc(100000), filename: "big.bin" });
  const f2 = await c.upload(pub.bucket_id, { bytes: Buffer.from("<svg/>"), filename: "poster.svg", contentType: "image/svg+xml" });
  await c.waitForUpload(pub.bucket_id, f1.id); await c.waitForUpload(pub.bucket_id, f2.id);
  console.log(f1.id, f1.size, f2.id, f2.size);
  for (const o of ["asc", "desc"]) console.log(o, (await c.files("spaces", alice.space.space_id, { sortField: "size", sortOrder: o })).data.map((f) => [f.id, f.size]));
  console.log((await s.db.query("select file_id, size, status from console_files")).rows);
  await c.close();
} finally { await s.teardown(); }
