// The operator commands `memrelay replay` and `memrelay lag` know the blob store's read models (blobstore_apps,
// blobstore_keys, blobstore_accounts, blobstore_buckets, blobstore_blobs): lag reports them, replay rebuilds them
// from the event log, equal to what the running service had built.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import type { TestDatabase } from "./support/postgres.ts";
import type { BlobstoreHandle } from "../gateway/blobstore/options.ts";
import { blobstoreCommand } from "../cli/blobstore.ts";
import { runProjectionsCommand } from "./support/projections-cli.ts";
import { blobstoreReadModels } from "./support/blobstore-read-models.ts";
import type { HttpClient } from "./support/blobstore-testkit.ts";
import { startTestBlobstore, type TestBlobstore } from "./support/blobstore.ts";

const NAMES = ["blobstore_apps", "blobstore_keys", "blobstore_accounts", "blobstore_buckets", "blobstore_blobs"];

let tdb: TestDatabase;
let svc: BlobstoreHandle | undefined;
let http: HttpClient;
let env: Record<string, string>;

let bs: TestBlobstore | undefined;
beforeAll(async () => {
  bs = await startTestBlobstore("memrelay_blobstore_cli");
  ({ db: tdb, svc, http } = bs);
  env = bs.env;
}, 60_000);
afterAll(() => bs?.stop());

const run = (cmd: "replay" | "lag", args: string[]) => runProjectionsCommand(cmd, args, env);

const snapshot = () => blobstoreReadModels(tdb.url);

describe("memrelay replay / lag and the blob store's read models", () => {
  it("lag lists the blob store's projections; replay of each rebuilds identical rows", async () => {
    // Given an app, an admin key, an account (with its API key), a bucket, an object, a deleted object and a Walrus blob
    const out: string[] = [];
    const issued = await blobstoreCommand(["admin-key", "issue", "--app", "cli-app", "--json"], env, { out: (l) => out.push(l), err: () => undefined });
    expect(issued).toBe(0);
    const admin = JSON.parse(out[0]).secret as string;
    const acct = (await http("POST", "/accounts", { bearer: admin, body: { name: "acct" } })).json();
    const apiKey = acct.api_key.secret as string;
    expect((await http("POST", "/api/v1/buckets", { bearer: apiKey, body: { name: "cli-bucket" } })).status).toBe(201);
    expect((await http("PUT", "/api/v1/buckets/cli-bucket/blobs/keep", { bearer: apiKey, body: "kept" })).status).toBe(201);
    expect((await http("PUT", "/api/v1/buckets/cli-bucket/blobs/gone", { bearer: apiKey, body: "gone" })).status).toBe(201);
    await http("DELETE", "/api/v1/buckets/cli-bucket/blobs/gone", { bearer: apiKey });
    await http("PUT", "/v1/blobs?epochs=3", { body: "walrus" });
    expect(await svc!.caughtUp()).toBe(true);
    // (stopped, so that only the command writes the read models from here on)
    http.close();
    await svc!.stop();
    svc = undefined;
    const before = await snapshot();
    expect(before.bs_keys.length).toBeGreaterThanOrEqual(2);
    expect(before.bs_objects.length).toBe(1);
    expect(before.bs_walrus_objects.length).toBe(1);

    // lag lists each of them, caught up
    const lag = await run("lag", []);
    expect(lag.rc).toBe(0);
    for (const name of NAMES) expect(lag.out).toMatch(new RegExp(`^${name}\\s+checkpoint\\s+[1-9]\\d*\\s+lag 0 events$`, "m"));

    // When the read models are damaged and each projection is replayed by name
    const c = new pg.Client({ connectionString: tdb.url });
    await c.connect();
    await c.query(`DELETE FROM bs_buckets; DELETE FROM bs_objects; DELETE FROM bs_keys; UPDATE bs_contents SET refs = 99`);
    await c.end();
    for (const name of NAMES) expect((await run("replay", [name])).rc).toBe(0);

    // Then the rows are identical to what the service had built, and lag shows them caught up
    expect(await snapshot()).toEqual(before);
    const after = await run("lag", ["blobstore_blobs"]);
    expect(after.out).toMatch(/^blobstore_blobs\s+checkpoint\s+[1-9]\d*\s+lag 0 events$/m);
    expect(after.out).not.toMatch(/blobstore_keys|memory_index/);
  }, 60_000);
});
