// The test support itself (issue 11): a suite whose setup fails stops the nats-server it started and drops its
// database, so a failed run leaves nothing behind.
import { describe, expect, it } from "vitest";
import pg from "pg";
import { createServer } from "node:net";
import { startTestStack } from "./support/stack.ts";
import { runningNatsServers } from "./support/nats-server.ts";
import { adminUrl } from "./support/postgres.ts";

async function testDatabases(): Promise<string[]> {
  const c = new pg.Client({ connectionString: adminUrl() });
  await c.connect();
  try {
    return (await c.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'memrelay_test_%'")).rows.map((r) => r.datname);
  } finally {
    await c.end();
  }
}

describe("startTestStack", () => {
  it("stops its nats-server and drops its database when the setup fails", async () => {
    const before = new Set(await testDatabases());
    const running = runningNatsServers();
    // A late step fails: the blob store's port is taken.
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", () => r()));
    const port = (blocker.address() as { port: number }).port;
    await expect(startTestStack({ BLOBSTORE_PORT: String(port) })).rejects.toThrow(/cannot listen/);
    blocker.close();
    expect(runningNatsServers()).toBe(running);
    // Other suites may create databases meanwhile; none of ours may be left.
    const created = (await testDatabases()).filter((d) => !before.has(d));
    for (const d of created) expect(d, "a database created by the failed setup").toBe("(dropped)");
  }, 60_000);
});
