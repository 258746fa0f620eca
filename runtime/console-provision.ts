// Provisioning for a locally composed console (runtime/local-stack.ts): the blob-store account its files live in
// and its sponsor key. On a fresh stack the account is created through the blob store's own write side (the same
// commands its operator CLI uses); its API key (shown once) and the sponsor key are kept in the data directory
// (0600) so a restart reuses them. A deployment passes CONSOLE_BLOBSTORE_API_KEY / CONSOLE_SPONSOR_KEY instead.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { request } from "undici";
import type { EventLog } from "../eventlog/connection.ts";
import type { Db } from "../db/pool.ts";
import type { ProjectionRunner } from "../projections/runtime.ts";
import { waitForProjection } from "../projections/checkpoint-wait.ts";
import { PROJECTION_NAMES } from "../projections/blobstore/read-models.ts";
import { BlobstoreLog } from "../actors/blobstore/log.ts";
import { createAccount, ensureApp, type Core } from "../actors/blobstore/commands.ts";
import type { Kind } from "../schemas/blobstore/events.ts";
import { generateKeypair, keypairFromSecret, mint } from "../adapters/chain/local/accounts.ts";
import { seedOf } from "../adapters/chain/sui/keys.ts";
import type { LocalChain } from "../adapters/chain/local/local-chain.ts";

export const CONSOLE_STORAGE_APP = "memrelay-console";

async function keyWorks(url: string, apiKey: string): Promise<boolean> {
  const res = await request(`${url}/api/v1/buckets?limit=1`, { headers: { authorization: `Bearer ${apiKey}` } }).catch(() => null);
  if (!res) return false;
  await res.body.dump();
  return res.statusCode === 200;
}

/** The console's blob-store API key: from `apiKey`, the data directory, or a new account. */
export async function provisionStorage(opts: {
  log: EventLog;
  db: Db;
  blobstoreUrl: string;
  /** the blob store's runners in this process (when it runs its projections; else their checkpoints are polled) */
  runners: Readonly<Partial<Record<Kind, ProjectionRunner>>>;
  dataDir: string;
  apiKey?: string;
}): Promise<{ url: string; apiKey: string }> {
  if (opts.apiKey) return { url: opts.blobstoreUrl, apiKey: opts.apiKey };
  const dir = join(opts.dataDir, "console");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, "storage.json");
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, "utf8")) as { api_key: string };
    if (await keyWorks(opts.blobstoreUrl, saved.api_key)) return { url: opts.blobstoreUrl, apiKey: saved.api_key };
  }
  const core: Core = {
    log: new BlobstoreLog(opts.log),
    db: opts.db,
    async settle(kind, seq) {
      if (!(await waitForProjection(opts.db, PROJECTION_NAMES[kind], seq, 30_000, opts.runners[kind]))) throw new Error(`blob store read model ${kind} did not reach ${seq}`);
    },
  };
  await ensureApp(core, CONSOLE_STORAGE_APP);
  const { account, key } = await createAccount(core, CONSOLE_STORAGE_APP, "memrelay console");
  writeFileSync(file, JSON.stringify({ account_id: account.account_id, api_key: key.secret }) + "\n", { mode: 0o600 });
  chmodSync(file, 0o600);
  return { url: opts.blobstoreUrl, apiKey: key.secret };
}

/**
 * A sponsor key (from `secret` — hex or suiprivkey —, the data directory's `<service>/sponsor.key`, or new), funded for gas by the ledger
 * operator: the console's (bucket policies), the relayer's gas station (/sponsor) and the local sponsorship provider each have one.
 */
export async function provisionSponsor(opts: { chain: LocalChain; operatorSecretKey: Uint8Array; dataDir: string; service?: "console" | "relayer" | "sponsor-provider"; secret?: string; funding?: bigint }): Promise<Uint8Array> {
  let secret: Uint8Array;
  if (opts.secret) secret = seedOf(opts.secret);
  else {
    const dir = join(opts.dataDir, opts.service ?? "console");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = join(dir, "sponsor.key");
    if (!existsSync(file)) writeFileSync(file, Buffer.from(generateKeypair().secretKey).toString("hex") + "\n", { mode: 0o600 });
    secret = Uint8Array.from(Buffer.from(readFileSync(file, "utf8").trim(), "hex"));
  }
  const address = keypairFromSecret(secret).address;
  const funding = opts.funding ?? 1_000_000_000_000n;
  const { balances } = await opts.chain.balance(address);
  if ((balances.SUI ?? 0n) < funding / 2n) await mint(opts.chain, { operatorKey: opts.operatorSecretKey, to: address, amount: funding });
  return secret;
}
