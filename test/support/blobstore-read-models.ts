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

/**
 * Empties and rewinds the blob store's blobs read model as a replay run by another process does, and holds its
 * projection there (the checkpoint row locked, as a stall leaves it) until `release`.
 */
export async function holdBlobsReadModelBehind(databaseUrl: string): Promise<{ release(): Promise<void> }> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  for (;;) {
    await c.query("BEGIN");
    await c.query("UPDATE projection_checkpoints SET seq = 0 WHERE name = 'blobstore_blobs'");
    await c.query("TRUNCATE bs_objects, bs_walrus_objects, bs_contents");
    await c.query("COMMIT");
    await c.query("BEGIN");
    const held = await c.query("SELECT seq FROM projection_checkpoints WHERE name = 'blobstore_blobs' AND seq = 0 FOR UPDATE");
    // (the projection rebuilt in between: rewind again)
    if (held.rowCount === 1 && (await c.query("SELECT 1 FROM bs_contents LIMIT 1")).rowCount === 0) break;
    await c.query("ROLLBACK");
  }
  return {
    async release() {
      await c.query("ROLLBACK");
      await c.end();
    },
  };
}
