// The console's access index (projection `console_access`, see ./read-models.ts): which service-key addresses each
// bucket policy grants, mirrored from the on-chain objects carried by bucket.policy_created and sponsor.executed
// events.
import type { Projection } from "../runtime.ts";
import type { Db, Tx } from "../../db/pool.ts";
import type { StoredObject } from "../../schemas/chain.ts";
import type { AccessGroupFields, BucketPolicyFields } from "../../schemas/chain.ts";
import { CONSOLE_EVENTS_FILTER, EV, type ConsoleEvent } from "../../schemas/console/events.ts";

export const ACCESS_PROJECTION = "console_access";

/** The event types the access index reads, as they appear in a commit's JSON. */
const ACCESS_TYPES = [EV.bucketPolicyCreated, EV.sponsorExecuted].map((t) => Buffer.from(JSON.stringify(t)));

export const accessIndexProjection: Projection<ConsoleEvent> = {
  name: ACCESS_PROJECTION,
  filter: CONSOLE_EVENTS_FILTER,
  // It follows every console commit (one filter per consumer) but reads only two event types: the rest — uploads,
  // name claims, most of the traffic — are not decoded.
  wants: (raw) => {
    const commit = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    return ACCESS_TYPES.some((t) => commit.includes(t));
  },
  migrate: async (db: Db) => {
    await db.query(`
      CREATE TABLE IF NOT EXISTS console_policy_objects (
        object_id text PRIMARY KEY, policy_id text NOT NULL, kind text NOT NULL, version numeric NOT NULL, fields jsonb NOT NULL);
      CREATE INDEX IF NOT EXISTS console_policy_objects_policy ON console_policy_objects (policy_id);
      CREATE TABLE IF NOT EXISTS console_access (
        policy_id text NOT NULL, address text NOT NULL, scope text NOT NULL, source text NOT NULL, PRIMARY KEY (policy_id, address, source));
      CREATE INDEX IF NOT EXISTS console_access_address ON console_access (address);
    `);
  },
  reset: async (tx: Tx) => {
    await tx.query("TRUNCATE console_policy_objects, console_access");
  },
  apply: async (tx: Tx, events) => {
    const touched = new Set<string>();
    const store = async (o: StoredObject) => {
      const isPolicy = o.type.endsWith("::bucket_policy::BucketPolicy");
      const isGroup = o.type.endsWith("::bucket_policy::AccessGroup");
      if (!isPolicy && !isGroup) return;
      const policyId = isPolicy ? o.object_id : (o.fields as AccessGroupFields).policy_id;
      await tx.query(
        `INSERT INTO console_policy_objects (object_id, policy_id, kind, version, fields) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (object_id) DO UPDATE SET fields = EXCLUDED.fields, version = EXCLUDED.version
         WHERE console_policy_objects.version < EXCLUDED.version`,
        [o.object_id, policyId, isPolicy ? "policy" : "group", o.version, JSON.stringify(o.fields)],
      );
      touched.add(policyId);
    };
    for (const { event } of events) {
      if (event.type === EV.bucketPolicyCreated) await store(event.data.policy);
      else if (event.type === EV.sponsorExecuted) for (const o of event.data.objects) await store(o);
    }
    for (const policyId of touched) {
      const r = await tx.query<{ object_id: string; kind: string; fields: BucketPolicyFields & AccessGroupFields }>(
        "SELECT object_id, kind, fields FROM console_policy_objects WHERE policy_id = $1",
        [policyId],
      );
      const rows: [string, string, string][] = [];
      for (const o of r.rows) {
        const source = o.kind === "policy" ? "policy" : o.object_id;
        for (const a of o.fields.admins ?? []) rows.push([a, "readwrite", source]);
        if (o.kind === "group") for (const m of o.fields.members ?? []) if (!o.fields.admins.includes(m.address)) rows.push([m.address, m.scope, source]);
      }
      await tx.query("DELETE FROM console_access WHERE policy_id = $1", [policyId]);
      if (rows.length) {
        await tx.query(
          `INSERT INTO console_access (policy_id, address, scope, source) SELECT $1, a, s, src FROM unnest($2::text[], $3::text[], $4::text[]) AS x(a, s, src)
           ON CONFLICT DO NOTHING`,
          [policyId, rows.map((x) => x[0]), rows.map((x) => x[1]), rows.map((x) => x[2])],
        );
      }
    }
  },
};
