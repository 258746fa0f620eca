// Every row of the blob store's read models, ordered, to compare a database before and after a replay.
import pg from "pg";

const TABLES = {
  bs_apps: "app_id",
  bs_keys: "key_id",
  bs_accounts: "account_id",
  bs_buckets: "name",
  bs_objects: "object_id",
  bs_walrus_objects: "object_id",
  bs_contents: "blob_id",
} as const;

export async function blobstoreReadModels(databaseUrl: string): Promise<Record<string, unknown[]>> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const out: Record<string, unknown[]> = {};
    for (const [t, pk] of Object.entries(TABLES)) out[t] = (await c.query(`SELECT * FROM ${t} ORDER BY ${pk}`)).rows;
    return out;
  } finally {
    await c.end();
  }
}
