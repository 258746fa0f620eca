// `memrelay blobstore admin-key issue|revoke|list`: operator commands of the blob storage service (spec/blobstore.md,
// "Operator commands"). They talk to the event log (NATS_URL) and the read models (DATABASE_URL) directly, not to the
// HTTP listener: an app's first admin key cannot come from an API that needs an admin key.
//
// Rotation (the spec's procedure): `issue` a second key for the app, switch callers to it, `list` until the old key's
// last-used time stops moving, then `revoke` it. Revocation is effective on the very next request.
import { loadConfig } from "../config/env.ts";
import { createLogger } from "../config/logger.ts";
import { openEventLog } from "../eventlog/connection.ts";
import { createPool } from "../db/pool.ts";
import { ProjectionRunner, migrateCheckpoints } from "../projections/runtime.ts";
import { BlobstoreLog } from "../actors/blobstore/log.ts";
import { blobstoreProjection } from "../projections/blobstore/read-models.ts";
import { KIND, filterOf, type Kind } from "../schemas/blobstore/events.ts";
import { ensureApp, issueKey, revokeKey, type Core } from "../actors/blobstore/commands.ts";
import { Queries } from "../projections/blobstore/queries.ts";
import { isUuid, validateAppId } from "../schemas/blobstore/validation.ts";
import { HttpError } from "../gateway/http.ts";
import { NO_DATABASE_URL, flag, processIo, type CommandIo } from "./args.ts";

export const BLOBSTORE_HELP = `memrelay blobstore admin-key <command>

  issue --app <app-id> [--label <text>] [--json]
      Issues an admin key for the app (creating the app on first use). The key (64 hex characters) is printed
      once on stdout; its id and prefix go to stderr. Only its BLAKE2s-256 hash is stored.
  revoke <key-id>
      Revokes an admin key. Effective on the next request; there is no cache to wait for.
  list --app <app-id> [--json]
      Lists the app's admin keys, active and revoked: id, prefix, state, created, last used, revoked.

Rotation: issue a second key, switch callers to it, confirm with list that the old key's last-used time no longer
moves, then revoke the old key.

Environment: NATS_URL (default nats://127.0.0.1:4222), DATABASE_URL (required).`;

/** A write-side context for a short-lived process: read models are brought up to date by runners it starts itself. */
async function openCore(natsUrl: string, databaseUrl: string) {
  const eventLog = await openEventLog({ servers: natsUrl, name: "memrelay-blobstore-cli" });
  const db = createPool(databaseUrl, 2);
  const logger = createLogger({ level: "error" });
  await migrateCheckpoints(db);
  const runners = new Map<Kind, ProjectionRunner>();
  const runner = async (kind: Kind) => {
    let r = runners.get(kind);
    if (!r) {
      r = new ProjectionRunner(eventLog, db, blobstoreProjection(kind), logger);
      runners.set(kind, r);
      await r.start();
    }
    return r;
  };
  const log = new BlobstoreLog(eventLog);
  const core: Core = {
    log,
    db,
    async settle(kind, seq) {
      // A concurrently running service applies the event too; whichever commits first, the other notices.
      if (!(await (await runner(kind)).waitFor(seq, 30_000))) throw new Error(`the ${kind} read model did not reach sequence ${seq} within 30 s`);
    },
  };
  const catchUp = async (kind: Kind) => {
    const seq = await log.lastSeq(filterOf(kind));
    if (seq) await core.settle(kind, seq);
    else await runner(kind);
  };
  return {
    core,
    queries: new Queries(db),
    catchUp,
    async close() {
      for (const r of runners.values()) await r.stop();
      await db.end().catch(() => undefined);
      await eventLog.close().catch(() => undefined);
    },
  };
}

export async function blobstoreCommand(args: string[], env: Record<string, string | undefined> = process.env, io: CommandIo = processIo): Promise<number> {
  const [group, cmd, ...rest] = args;
  if (!group || group === "--help" || group === "-h" || (group === "admin-key" && (!cmd || cmd === "--help" || cmd === "-h")) || rest.includes("--help")) {
    io.out(BLOBSTORE_HELP);
    return 0;
  }
  if (group !== "admin-key" || !["issue", "revoke", "list"].includes(cmd)) {
    io.err(`unknown blobstore command: ${args.join(" ")}\n\n${BLOBSTORE_HELP}`);
    return 2;
  }
  const config = loadConfig(env);
  if (!config.databaseUrl) {
    io.err(NO_DATABASE_URL);
    return 2;
  }
  const asJson = rest.includes("--json");
  let appId: string | undefined;
  let keyId: string | undefined;
  try {
    if (cmd === "revoke") {
      keyId = rest.find((a) => !a.startsWith("--"));
      if (!keyId || !isUuid(keyId)) {
        io.err("usage: memrelay blobstore admin-key revoke <key-id>   (the id printed by issue and list)");
        return 2;
      }
    } else {
      appId = validateAppId(flag(rest, "--app"));
    }
  } catch (err) {
    io.err(`${err instanceof HttpError ? err.message : String(err)}\nusage: memrelay blobstore admin-key ${cmd} --app <app-id>`);
    return 2;
  }

  let ctx: Awaited<ReturnType<typeof openCore>>;
  try {
    ctx = await openCore(config.natsUrl, config.databaseUrl);
  } catch (err) {
    io.err(`cannot reach the event log or the database: ${(err as Error).message}`);
    return 1;
  }
  try {
    if (cmd === "issue") {
      const label = flag(rest, "--label") ?? null;
      if (label !== null && label.length > 128) {
        io.err("--label must be at most 128 characters");
        return 2;
      }
      const created = await ensureApp(ctx.core, appId!);
      const k = await issueKey(ctx.core, { kind: "admin", appId: appId!, accountId: null, label });
      if (asJson) {
        io.out(JSON.stringify({ key_id: k.state.key_id, app_id: appId, prefix: k.state.prefix, secret: k.secret, created_at: k.state.created_at, app_created: created }));
      } else {
        io.out(k.secret);
        io.err(`${created ? `created app ${appId}; ` : ""}issued admin key ${k.state.key_id} (prefix ${k.state.prefix}) for app ${appId}`);
        io.err("the key above is shown once: store it now (only its hash is kept)");
      }
      return 0;
    }
    if (cmd === "revoke") {
      const r = await revokeKey(ctx.core, keyId!, { kind: "admin" });
      if (!r.ok) {
        io.err(`no admin key ${keyId}`);
        return 1;
      }
      const { outcome, state } = r.result;
      const msg = outcome === "revoked" ? "revoked" : "was already revoked:";
      if (asJson) io.out(JSON.stringify({ key_id: keyId, app_id: state.app_id, prefix: state.prefix, state: "revoked", revoked_at: state.revoked_at, already: outcome === "already_revoked" }));
      else io.out(`${msg} admin key ${keyId} (prefix ${state.prefix}) of app ${state.app_id}`);
      return 0;
    }
    // list
    await ctx.catchUp(KIND.key);
    const keys = await ctx.queries.listKeys({ appId: appId! }, "admin");
    if (asJson) {
      io.out(JSON.stringify(keys.map((k) => ({ key_id: k.key_id, app_id: k.app_id, prefix: k.prefix, label: k.label, state: k.revoked_at ? "revoked" : "active", created_at: k.created_at, last_used_at: k.last_used_at, revoked_at: k.revoked_at }))));
      return 0;
    }
    if (!keys.length) {
      io.err(`app ${appId} has no admin keys`);
      return 0;
    }
    io.out(["KEY ID", "PREFIX", "STATE", "CREATED", "LAST USED", "REVOKED", "LABEL"].join("\t"));
    for (const k of keys) {
      io.out([k.key_id, k.prefix, k.revoked_at ? "revoked" : "active", k.created_at, k.last_used_at ?? "never", k.revoked_at ?? "-", k.label ?? ""].join("\t"));
    }
    return 0;
  } catch (err) {
    io.err(`blobstore ${cmd} failed: ${(err as Error).message}`);
    return 1;
  } finally {
    await ctx.close();
  }
}
