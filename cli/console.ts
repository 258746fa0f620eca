// `memrelay console …`: operator commands of the developer console (issue 5: keys are minted by an operator command
// for now). They talk to the event log (NATS_URL) and the read models (DATABASE_URL) directly, like the blob store's
// operator commands, and run a key actor host and the console projection themselves, so they work whether or not a
// console is running (when one is, either process may handle a command; the outcome is the same).
import { openEventLog } from "../eventlog/connection.ts";
import { createPool } from "../db/pool.ts";
import { loadConfig } from "../config/env.ts";
import { createLogger } from "../config/logger.ts";
import { ProjectionRunner, migrateCheckpoints } from "../projections/runtime.ts";
import { ConsoleLog } from "../actors/console/log.ts";
import { consoleCommand as newCommand } from "../schemas/console/commands.ts";
import { consoleProjection, CONSOLE_PROJECTION } from "../projections/console/read-models.ts";
import { ConsoleActorHost } from "../actors/console/host.ts";
import { keyActor } from "../actors/console/key.actor.ts";
import { addMember, createTeamSpace, mintKey, removeMember, revokeKey, signUp, type DirectoryContext } from "../actors/console/directory.ts";
import { orThrow } from "../actors/console/errors.ts";
import { inContract } from "../gateway/console/domain-errors.ts";
import { storageBucketName } from "../adapters/file-storage/blobstore-http.ts";
import { AGG, CMD, EV, type BucketCreateCommandData, type SpaceRole } from "../schemas/console/events.ts";
import { ConsoleHttpError, badRequest, isUuid, validateBucketName } from "../schemas/console/http.ts";
import { randomUUID } from "node:crypto";
import { NO_DATABASE_URL, flag, processIo, type CommandIo } from "./args.ts";

export const CONSOLE_HELP = `memrelay console <command>

  signup --email <email> [--name <name>] [--tier free|pro|enterprise] [--storage-cap <bytes>] [--json]
      Signs a user up and creates the user's personal space. Prints the user id and the space id.
  space create --owner <user-id> --name <name> [--tier <tier>] [--storage-cap <bytes>] [--json]
      Creates a team space owned by the user.
  member add --space <space-id> --user <user-id> [--role member|admin|owner]
  member remove --space <space-id> --user <user-id>
      Adds (or changes the role of) / removes a member of a team space. The plan's users limit applies.
  key mint --user <user-id> --role read_write|read_only [--space <space-id>] [--label <text>] [--json]
      Mints an API key (shown once; only its BLAKE2s-256 hash is stored). A read_write key also issues the user's
      service key, an Ed25519 Sui keypair whose secret (suiprivkey…) is shown once and whose address is stored:
      it signs the private-bucket and sponsorship transactions. --space limits the key to one space.
  key revoke <key-id>
      Revokes an API key; requests with it answer 401 api_key_revoked from then on.
  key list --user <user-id> [--json]
  bucket create-public --space <space-id> --name <name> [--json]
      Creates a public bucket (the HTTP API creates private buckets only). Needs a running console.

Environment: NATS_URL (default nats://127.0.0.1:4222), DATABASE_URL (required).`;

function required(args: string[], name: string): string {
  const v = flag(args, name);
  if (!v) throw badRequest(`${name} is required`);
  return v;
}

function optionalInt(args: string[], name: string): number | undefined {
  const v = flag(args, name);
  if (v === undefined) return undefined;
  if (!/^\d{1,16}$/.test(v)) throw badRequest(`${name} must be a number of bytes`);
  return Number(v);
}

async function openDirectory(natsUrl: string, databaseUrl: string) {
  const log = await openEventLog({ servers: natsUrl, name: "memrelay-console-cli" });
  const db = createPool(databaseUrl, 4);
  const logger = createLogger({ level: "error" });
  await migrateCheckpoints(db);
  const runner = new ProjectionRunner(log, db, consoleProjection, logger.child({ projection: CONSOLE_PROJECTION }));
  await runner.start();
  const clog = new ConsoleLog(log);
  const keys = new ConsoleActorHost(log, keyActor({ clog }), logger, { concurrency: 4 });
  await keys.start();
  const ctx: DirectoryContext = {
    clog,
    async settle(seq) {
      if (!(await runner.waitFor(seq, 30_000))) throw new Error(`the console read model did not reach sequence ${seq} within 30 s`);
    },
  };
  return {
    ctx,
    db,
    clog,
    async close() {
      await keys.stop();
      await runner.stop();
      await db.end().catch(() => undefined);
      await log.close().catch(() => undefined);
    },
  };
}

export async function consoleCommand(args: string[], env: Record<string, string | undefined> = process.env, io: CommandIo = processIo): Promise<number> {
  const [group, cmd, ...restArgs] = args;
  if (!group || group === "--help" || group === "-h" || args.includes("--help")) {
    io.out(CONSOLE_HELP);
    return 0;
  }
  const rest = group === "signup" ? [cmd, ...restArgs].filter((a) => a !== undefined) : restArgs;
  const known: Record<string, string[]> = { signup: [""], space: ["create"], member: ["add", "remove"], key: ["mint", "revoke", "list"], bucket: ["create-public"] };
  if (!known[group] || (group !== "signup" && !known[group].includes(cmd))) {
    io.err(`unknown console command: ${args.join(" ")}\n\n${CONSOLE_HELP}`);
    return 2;
  }
  const config = loadConfig(env);
  if (!config.databaseUrl) {
    io.err(NO_DATABASE_URL);
    return 2;
  }
  const asJson = rest.includes("--json");
  let d: Awaited<ReturnType<typeof openDirectory>>;
  try {
    d = await openDirectory(config.natsUrl, config.databaseUrl);
  } catch (err) {
    io.err(`cannot reach the event log or the database: ${(err as Error).message}`);
    return 1;
  }
  const print = (obj: Record<string, unknown>, human: string[]) => {
    if (asJson) io.out(JSON.stringify(obj));
    else for (const l of human) io.out(l);
  };
  try {
    if (group === "signup") {
      const r = await signUp(d.ctx, { email: required(rest, "--email"), name: flag(rest, "--name"), tier: flag(rest, "--tier"), storageCap: optionalInt(rest, "--storage-cap") });
      print({ user_id: r.user.user_id, email: r.user.email, personal_space_id: r.space.space_id, tier: r.space.tier }, [`user ${r.user.user_id} (${r.user.email})`, `personal space ${r.space.space_id}`]);
    } else if (group === "space") {
      const s = await createTeamSpace(d.ctx, { ownerUserId: required(rest, "--owner"), name: required(rest, "--name"), tier: flag(rest, "--tier"), storageCap: optionalInt(rest, "--storage-cap") });
      print({ space_id: s.space_id, name: s.name, tier: s.tier }, [`team space ${s.space_id} (${s.name}, ${s.tier})`]);
    } else if (group === "member") {
      const spaceId = required(rest, "--space");
      const userId = required(rest, "--user");
      const s =
        cmd === "add"
          ? await addMember(d.ctx, { spaceId, userId, role: (flag(rest, "--role") ?? "member") as SpaceRole })
          : await removeMember(d.ctx, { spaceId, userId });
      print({ space_id: s.space_id, members: s.members }, [`space ${s.space_id}: ${s.members.length} members`]);
    } else if (group === "key" && cmd === "mint") {
      const role = required(rest, "--role");
      if (role !== "read_write" && role !== "read_only") throw badRequest("--role must be read_write or read_only");
      const k = await mintKey(d.ctx, { userId: required(rest, "--user"), role, spaceId: flag(rest, "--space") ?? null, label: flag(rest, "--label") ?? null });
      if (asJson) io.out(JSON.stringify(k));
      else {
        io.out(k.secret);
        if (k.service_key) io.out(`service key ${k.service_key.address}\n${k.service_key.secret_key}`);
        io.err(`minted ${role} API key ${k.key_id} (prefix ${k.prefix}); the secrets above are shown once: store them now`);
      }
    } else if (group === "key" && cmd === "revoke") {
      const id = rest.find((a) => !a.startsWith("--"));
      if (!id) throw badRequest("usage: memrelay console key revoke <key-id>");
      const outcome = await revokeKey(d.ctx, id);
      print({ key_id: id, outcome }, [`${outcome === "revoked" ? "revoked" : "already revoked"}: ${id}`]);
    } else if (group === "key" && cmd === "list") {
      const userId = required(rest, "--user");
      if (!isUuid(userId)) throw badRequest("--user must be a UUID");
      const r = await d.db.query("SELECT key_id::text, role, prefix, label, space_id::text, service_address, state, created_at, revoked_at FROM console_keys WHERE user_id = $1 ORDER BY created_at", [userId]);
      if (asJson) io.out(JSON.stringify(r.rows));
      else for (const k of r.rows) io.out(`${k.key_id}  ${k.prefix}…  ${k.role.padEnd(10)}  ${k.state.padEnd(11)}  ${k.service_address ?? "-"}`);
    } else if (group === "bucket") {
      const spaceId = required(rest, "--space");
      if (!isUuid(spaceId)) throw badRequest("--space must be a UUID");
      const name = validateBucketName(required(rest, "--name"));
      const space = await d.clog.lastEvent(AGG.space, spaceId);
      if (!space) throw badRequest(`space ${spaceId} not found`);
      const bucketId = randomUUID();
      const claim = orThrow(await d.clog.claim("bucket", spaceId, name, bucketId));
      const data: BucketCreateCommandData = {
        bucket_id: bucketId,
        space_id: spaceId,
        name,
        visibility: "public",
        storage_bucket_name: storageBucketName(bucketId),
        name_claim: claim,
        created_by: "00000000-0000-0000-0000-000000000000",
        created_at: new Date().toISOString(),
      };
      const r = await d.clog.dispatch(bucketId, newCommand(CMD.bucketCreate, data), (e) => (e.type === EV.bucketActivated ? true : undefined), 30_000);
      await d.ctx.settle(r.seq);
      print({ bucket_id: bucketId, name, visibility: "public", state: "active" }, [`public bucket ${bucketId} (${name})`]);
    }
    return 0;
  } catch (thrown) {
    const err = inContract(thrown);
    if (err instanceof ConsoleHttpError) {
      io.err(err.status === 503 ? "timed out waiting for the console: is it running (memrelay start)?" : `${err.message}${err.code ? ` (${err.code})` : ""}`);
      return err.status >= 500 ? 1 : 2;
    }
    io.err(`failed: ${(err as Error).message}`);
    return 1;
  } finally {
    await d.close();
  }
}
