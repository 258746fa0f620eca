// The console's read models, built from `evt.console.>` by the projection runtime (checkpoint in the same
// transaction as the writes). Two projections, fed by one consumer (each commit decoded once) but applied and
// checkpointed each in its own transactions, so their lag is independent until one falls a full batch behind:
//   console         users, spaces and members, API keys, buckets, files (with upload status), storage accounting
//   console_access  the access index: which service-key addresses each bucket policy grants, mirrored from the
//                   on-chain objects carried by bucket.policy_created and sponsor.executed events. Uploads and
//                   downloads of private buckets check it; until it has caught up with a grant they answer
//                   403 mirror_missing_grant (spec/console.md, Errors).
// Files are folded per batch (one insert for new files and one update for the rest), so a burst of uploads costs
// two statements per batch, not several per event.
// The tables are in ./console-tables.ts, the batch writes of files in ./file-batch.ts, the access index in
// ./access-index.ts.
import type { Projection } from "../runtime.ts";
import type { Tx } from "../../db/pool.ts";
import { AGG, CONSOLE_EVENTS_FILTER, EV, type ConsoleEvent } from "../../schemas/console/events.ts";
import { uploadChange } from "../../schemas/console/upload-view.ts";
import { migrateConsole } from "./console-tables.ts";
import { foldStatus, writeFileBatch, type BucketDeltas, type FilePatch, type SpaceDeltas } from "./file-batch.ts";
import { accessIndexProjection } from "./access-index.ts";

export const CONSOLE_PROJECTION = "console";

const idOf = (aggregate: string) => aggregate.slice(aggregate.lastIndexOf(".") + 1);

/**
 * How a name claim's commit starts its aggregate in the commit's JSON (every event of a commit has the same one; in a
 * string value the quotes would be escaped, so no file name can imitate it).
 */
const CLAIM_COMMIT = Buffer.from(JSON.stringify({ aggregate: `${AGG.claim}.` }).slice(1, -2));

export const consoleProjection: Projection<ConsoleEvent> = {
  name: CONSOLE_PROJECTION,
  filter: CONSOLE_EVENTS_FILTER,
  // Name claims (one per upload) hold nothing the read models show: they are not decoded, and a claim alone costs no
  // transaction (its checkpoint moves with the next batch, or shortly).
  wants: (raw) => !Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).includes(CLAIM_COMMIT),
  migrate: migrateConsole,
  reset: async (tx: Tx) => {
    await tx.query("TRUNCATE console_users, console_spaces, console_members, console_keys, console_buckets, console_files");
  },
  apply: async (tx: Tx, events) => {
    const files = new Map<string, FilePatch>();
    const bucketDelta: BucketDeltas = new Map();
    const spaceDelta: SpaceDeltas = new Map();
    const addBucket = (id: string, bytes: number, files: number) => {
      const d = bucketDelta.get(id) ?? { bytes: 0, files: 0 };
      d.bytes += bytes;
      d.files += files;
      bucketDelta.set(id, d);
    };
    const addSpace = (id: string, bytes: number, buckets: number) => {
      const d = spaceDelta.get(id) ?? { bytes: 0, buckets: 0 };
      d.bytes += bytes;
      d.buckets += buckets;
      spaceDelta.set(id, d);
    };
    const patch = (id: string, at: string) => {
      let p = files.get(id);
      if (!p) files.set(id, (p = { updated_at: at }));
      p.updated_at = at;
      return p;
    };

    for (const { event } of events) {
      const id = idOf(event.aggregate);
      const at = event.occurred_at;
      switch (event.type) {
        case EV.userSignedUp: {
          const u = event.data;
          await tx.query(
            `INSERT INTO console_users (user_id, email, name, personal_space_id, created_at) VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (user_id) DO UPDATE SET email = EXCLUDED.email, name = EXCLUDED.name`,
            [u.user_id, u.email, u.name, u.personal_space_id, u.created_at],
          );
          break;
        }
        case EV.spaceCreated:
        case EV.spaceMemberAdded:
        case EV.spaceMemberRemoved: {
          const s = event.data;
          await tx.query(
            `INSERT INTO console_spaces (space_id, type, name, tier, storage_cap, member_count, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (space_id) DO UPDATE SET name = EXCLUDED.name, tier = EXCLUDED.tier, storage_cap = EXCLUDED.storage_cap, member_count = EXCLUDED.member_count`,
            [s.space_id, s.type, s.name, s.tier, s.storage_cap, s.members.length, s.created_at],
          );
          await tx.query("DELETE FROM console_members WHERE space_id = $1", [s.space_id]);
          if (s.members.length) {
            await tx.query(
              `INSERT INTO console_members (space_id, user_id, role, added_at)
               SELECT $1, u, r, a FROM unnest($2::uuid[], $3::text[], $4::timestamptz[]) AS x(u, r, a)`,
              [s.space_id, s.members.map((m) => m.user_id), s.members.map((m) => m.role), s.members.map((m) => m.added_at)],
            );
          }
          break;
        }
        case EV.keyMinted: {
          const k = event.data;
          await tx.query(
            `INSERT INTO console_keys (key_id, user_id, role, hash, prefix, label, space_id, service_address, state, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'registering', $9) ON CONFLICT (key_id) DO NOTHING`,
            [k.key_id, k.user_id, k.role, k.hash, k.prefix, k.label, k.space_id, k.service_address, k.created_at],
          );
          break;
        }
        case EV.keyActivated:
        case EV.keyRejected:
        case EV.keyRevokeRequested:
        case EV.keyRevoked: {
          const state = { [EV.keyActivated]: "active", [EV.keyRejected]: "rejected", [EV.keyRevokeRequested]: "revoking", [EV.keyRevoked]: "revoked" }[event.type];
          await tx.query("UPDATE console_keys SET state = $2, revoked_at = CASE WHEN $2 = 'revoked' THEN $3::timestamptz ELSE revoked_at END WHERE key_id = $1", [id, state, at]);
          break;
        }
        case EV.bucketCreated:
        case EV.bucketReserved: {
          const b = event.data;
          const r = await tx.query(
            `INSERT INTO console_buckets (bucket_id, space_id, name, storage_bucket_name, visibility, state, reserve_digest, created_by, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) ON CONFLICT (bucket_id) DO NOTHING`,
            [b.bucket_id, b.space_id, b.name, b.storage_bucket_name, b.visibility, event.type === EV.bucketReserved ? "pending_policy" : "provisioning", "digest" in b ? b.digest : null, b.created_by, b.created_at],
          );
          if (r.rowCount) addSpace(b.space_id, 0, 1);
          break;
        }
        case EV.bucketFinalizeRequested:
          await tx.query("UPDATE console_buckets SET state = 'finalizing', last_error = NULL WHERE bucket_id = $1", [id]);
          break;
        case EV.bucketFinalizeFailed:
          await tx.query("UPDATE console_buckets SET state = 'pending_policy', last_error = $2 WHERE bucket_id = $1", [id, JSON.stringify(event.data)]);
          break;
        case EV.bucketPolicyCreated:
          await tx.query("UPDATE console_buckets SET state = 'provisioning', encryption_policy_id = $2, updated_at = $3 WHERE bucket_id = $1", [id, event.data.policy_id, at]);
          break;
        case EV.bucketActivated:
          await tx.query("UPDATE console_buckets SET state = 'active', updated_at = $2 WHERE bucket_id = $1 AND state <> 'deleted'", [id, at]);
          break;
        case EV.bucketUpdated: {
          const u = event.data;
          await tx.query(
            `UPDATE console_buckets SET name = coalesce($2, name),
               encryption_policy_id = CASE WHEN $3 THEN $4 ELSE encryption_policy_id END, updated_at = $5 WHERE bucket_id = $1`,
            [id, u.name ?? null, u.encryption_policy_id !== undefined, u.encryption_policy_id ?? null, u.updated_at],
          );
          break;
        }
        case EV.bucketDeleteRequested:
          await tx.query("UPDATE console_buckets SET state = 'deleting', updated_at = $2 WHERE bucket_id = $1", [id, at]);
          break;
        case EV.bucketDeleted: {
          const r = await tx.query<{ space_id: string }>("UPDATE console_buckets SET state = 'deleted', updated_at = $2 WHERE bucket_id = $1 AND state <> 'deleted' RETURNING space_id::text", [id, at]);
          if (r.rows[0]) addSpace(r.rows[0].space_id, 0, -1);
          break;
        }
        case EV.uploadQueued: {
          const p = patch(id, at);
          p.insert = event.data;
          foldStatus(p, "uploading");
          Object.assign(p, uploadChange(event));
          break;
        }
        case EV.uploadStarted:
          Object.assign(patch(id, at), uploadChange(event));
          break;
        case EV.uploadCompleted: {
          const d = event.data;
          const p = patch(id, at);
          Object.assign(p, uploadChange(event));
          foldStatus(p, "completed");
          addBucket(d.bucket_id, d.size, 1);
          addSpace(d.space_id, d.size, 0);
          break;
        }
        case EV.uploadFailed:
          Object.assign(patch(id, at), uploadChange(event));
          break;
        case EV.uploadCleaned: {
          const p = patch(id, at);
          Object.assign(p, uploadChange(event));
          foldStatus(p, "failed");
          break;
        }
        case EV.fileDeleteRequested:
          foldStatus(patch(id, at), "deleting");
          break;
        case EV.fileDeleted: {
          const d = event.data;
          const p = patch(id, at);
          foldStatus(p, "deleted");
          p.deleted_at = d.deleted_at;
          if (d.size > 0) {
            addBucket(d.bucket_id, -d.size, -1);
            addSpace(d.space_id, -d.size, 0);
          }
          break;
        }
        default:
          break;
      }
    }

    await writeFileBatch(tx, files, bucketDelta, spaceDelta);
  },
};

/** The console's read models, in the order `memrelay replay all` rebuilds them. */
export const consoleProjections: readonly Projection[] = [consoleProjection, accessIndexProjection];
