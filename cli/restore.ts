// `memrelay restore --owner <addr> --namespace <ns>`: rebuilds an owner's namespace in the memory index from the blob
// objects recorded on chain (actors/relayer/restore-namespace.ts), with a progress bar. For when the event log that `memrelay replay`
// rebuilds from is gone (or never had those memories).
import { blobPortFrom } from "../runtime/blob-port.ts";
import { openEventLog } from "../eventlog/connection.ts";
import { createPool } from "../db/pool.ts";
import { loadConfig } from "../config/env.ts";
import { createLogger } from "../config/logger.ts";
import { LocalChain } from "../adapters/chain/local/local-chain.ts";
import { createEnvelopeEncryption } from "../adapters/encryption/envelope.ts";
import { parseServerConfigs, thresholdFromEnv } from "../adapters/encryption/config.ts";
import { createDelegateSession } from "../adapters/encryption/session.ts";
import { createEmbedder, createScheduler, embedderConfigOf } from "../adapters/embeddings/select.ts";
import type { DecryptCredential } from "../adapters/ports.ts";
import { IndexLog } from "../projections/relayer/index-log.ts";
import { DEFAULT_CANDIDATE_CAP, IndexCatchingUp, planRestore, restoreNamespace, type RestorePorts } from "../actors/relayer/restore-namespace.ts";
import { ProjectionRunner } from "../projections/runtime.ts";
import { memoryIndexProjection } from "../projections/relayer/memory-index.ts";
import { ValidationError, namespaceOf, ownerAddressOf } from "../schemas/relayer/http.ts";
import { credentialsPath, readCredentials } from "./credentials.ts";
import { ProgressBar } from "./progress.ts";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { LexicalKeyring } from "../adapters/lexical/keys.ts";
import { LEXICAL_KEY_FILE, lexicalSecretFor } from "../runtime/lexical.ts";
import { NO_DATABASE_URL, flag } from "./args.ts";

export const RESTORE_HELP = `memrelay restore --owner <address> --namespace <ns> [--include-forgotten] [--dry-run] [--credentials <file>]
  Rebuilds the owner's namespace in the memory index from the blob objects recorded on chain: every blob without an
  index row is downloaded, decrypted, re-embedded and appended to the event log as memory.restored (so a later replay
  keeps it), with a progress bar. Up to ${DEFAULT_CANDIDATE_CAP.toLocaleString("en")} blob objects of the namespace, newest first.

  Decrypting needs the owner's authority: a delegate key of that owner, from the credential file (--credentials, or
  MEMORY_CREDENTIALS_FILE, or ~/.memory/credentials.json). Without one, --dry-run still reports what is missing.
  Blobs created before the namespace's last forget stay forgotten unless --include-forgotten (the forget horizon
  is kept in Postgres across index rebuilds, even from a new event log; it is lost only with the database).
  Configuration: the operator variables of \`memrelay worker\` (NATS_URL, DATABASE_URL, CHAIN_RPC_URL,
  ENCRYPTION_SERVER_CONFIGS, BLOBSTORE_AGGREGATOR_URL, MEMORY_PACKAGE_ID, MEMRELAY_EMBEDDER, ...).

  restore or replay?
    memrelay replay   the event log is intact and a read model is missing or wrong: fast, no re-embedding, exact
                      (vectors, importance, forgets and earlier restores all come back as they were).
    memrelay restore  the event log is gone (or lost these memories): slow (download, decrypt, re-embed each blob),
                      needs the owner's key, and gives restored rows importance 0.5 and the chain's creation time.`;

export async function restoreCommand(args: string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(RESTORE_HELP);
    return 0;
  }
  let owner: string, namespace: string;
  try {
    owner = ownerAddressOf(flag(args, "--owner") ?? "");
    if (flag(args, "--namespace") === undefined) throw new ValidationError("--namespace is required");
    namespace = namespaceOf(flag(args, "--namespace"));
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${RESTORE_HELP}`);
    return 2;
  }
  const dryRun = args.includes("--dry-run");
  const includeForgotten = args.includes("--include-forgotten");
  const config = loadConfig(env);
  if (!config.databaseUrl) {
    console.error(NO_DATABASE_URL);
    return 2;
  }
  const servers = parseServerConfigs(env);
  if (!dryRun && (!servers?.length || !config.chainRpcUrl)) {
    console.error("ENCRYPTION_SERVER_CONFIGS and CHAIN_RPC_URL are required to decrypt (memrelay start prints them)");
    return 2;
  }
  const logger = createLogger({ format: config.logFormat });
  const log = await openEventLog({ servers: config.natsUrl, name: "memrelay-restore" });
  const db = createPool(config.databaseUrl, 4);
  const chain = await LocalChain.open(log, { packageId: config.packageId, network: config.network, healIntervalMs: 0 });
  const blobs = blobPortFrom(config, { cache: false });
  const embedder = createEmbedder(embedderConfigOf(config));
  const encryption = servers?.length
    ? createEnvelopeEncryption({ packageId: config.packageId, rpcUrl: config.chainRpcUrl, serverConfigs: servers, threshold: thresholdFromEnv(servers.reduce((s, c) => s + c.weight, 0), env) })
    : undefined;
  const index = new IndexLog(log, db);
  let runner: ProjectionRunner | undefined;
  try {
    // The restore's rows reach the index through the memory_index projection: use a running relayer's, or run one.
    if (!(await index.waitApplied(await index.lastIndexSeq(), 2_000))) {
      console.error("no memory_index projection is keeping up; applying the event log in this process");
      runner = new ProjectionRunner(log, db, memoryIndexProjection(embedder.dims), logger.child({ projection: "memory_index" }));
      await runner.start();
    }
    // The relayer's lexical key (never a new one: terms under another key would match nothing).
    const lexical = config.lexicalKey || existsSync(join(config.dataDir, LEXICAL_KEY_FILE)) ? new LexicalKeyring(lexicalSecretFor(config)) : undefined;
    if (!lexical) console.error("no lexical index key (MEMRELAY_LEXICAL_KEY): restored memories are ranked by their vectors only");
    // A dry run without key-server configuration never decrypts.
    const ports: RestorePorts = { chain, blobs, encryption: encryption ?? (undefined as never), embedder: createScheduler(embedder, config.embedding), db, index, lexical };
    const common = { owner, namespace, includeForgotten, candidateCap: DEFAULT_CANDIDATE_CAP, scope: "namespace" as const, barrierTimeoutMs: 300_000 };
    const plan = await planRestore(ports, { ...common, limit: DEFAULT_CANDIDATE_CAP });
    const count = (s: string) => plan.items.filter((i) => i.state === s).length;
    const missing = count("missing");
    console.log(`${namespace}: ${plan.items.length} blob objects on chain, ${count("indexed")} indexed, ${count("forgotten")} forgotten, ${missing} missing${plan.capReached ? ` (only the newest ${DEFAULT_CANDIDATE_CAP} were examined)` : ""}`);
    if (dryRun || missing === 0) return 0;
    const credential = await ownerCredential(env, args, chain, owner, config.packageId, config.chainRpcUrl);
    await credential(); // fails early on a missing or foreign key
    const bar = new ProgressBar(`restore ${namespace}`);
    const t0 = Date.now();
    const r = await restoreNamespace(ports, {
      ...common,
      limit: missing,
      credential,
      applyTimeoutMs: 300_000,
      onProgress: (p) => bar.update(p.done, p.total, `restored ${p.restored} failed ${p.failed}`),
    });
    bar.finish(
      `restored ${r.restored} of ${missing} missing in ${((Date.now() - t0) / 1000).toFixed(1)} s` +
        (r.failed ? `; ${r.failed} could not be downloaded or decrypted (client-encrypted manual memories cannot be re-embedded)` : "") +
        (r.applied ? "" : "; the index is still applying them"),
    );
    return 0;
  } catch (err) {
    console.error(err instanceof IndexCatchingUp || err instanceof ValidationError ? err.message : `restore failed: ${(err as Error).message}`);
    return 1;
  } finally {
    await runner?.stop();
    await blobs.close();
    await chain.close();
    await log.close();
    await db.end();
  }
}

/**
 * Decrypt credentials from a delegate key of `owner` (the credential file), checked against the chain: a session key
 * (5 minutes), minted again when it is about to expire, so a long restore keeps decrypting.
 */
async function ownerCredential(env: Record<string, string | undefined>, args: string[], chain: LocalChain, owner: string, packageId: string, rpcUrl: string): Promise<() => Promise<DecryptCredential>> {
  const path = flag(args, "--credentials") ?? credentialsPath(env);
  const creds = readCredentials(path);
  if (!creds) throw new ValidationError(`no credential file at ${path}: restoring needs a delegate key of ${owner} to decrypt (or use --dry-run)`);
  const resolved = await chain.resolveDelegate(creds.delegatePublicKeyHex.toLowerCase(), creds.accountId || undefined);
  if (!resolved || resolved.owner !== owner) throw new ValidationError(`the delegate key in ${path} is not an active key of ${owner}`);
  const key = Uint8Array.from(Buffer.from(creds.delegatePrivateKey.replace(/^0x/, ""), "hex"));
  let current: { header: string; expiresAtMs: number } | undefined;
  return async () => {
    if (!current || Date.now() > current.expiresAtMs - 30_000) current = await createDelegateSession({ delegateSecretKey: key, packageId, rpcUrl });
    return { kind: "session", exported: current.header };
  };
}
