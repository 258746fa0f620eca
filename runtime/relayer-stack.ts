// Starts the relayer's processes around given ports: gateway, remember-job and restore-job actor hosts, projections. Each role
// can run alone (a replica) or together (one machine); they share nothing but NATS and Postgres.
import { createLanguageModel } from "../adapters/language-model/select.ts";
import type { EventLog } from "../eventlog/connection.ts";
import { COMMAND_DEDUP_WINDOW_SECS, openNonceStore } from "../eventlog/connection.ts";
import type { Db } from "../db/pool.ts";
import { ReadPool } from "../db/read-pool.ts";
import type { RelayerConfig } from "../config/env.ts";
import type { Logger } from "../config/logger.ts";
import { namingAddressVariable } from "../config/listen-error.ts";
import type { BlobPort, ChainPort, EmbeddingPort, EncryptionPort, SponsoredChainPort } from "../adapters/ports.ts";
import { WalletPool } from "../adapters/chain/wallet-pool.ts";
import { expectedTxMs } from "../config/network-profile.ts";
import { createScheduler } from "../adapters/embeddings/select.ts";
import { RecordBatcher } from "../adapters/chain/record-batcher.ts";
import { QuiltWriter } from "../adapters/blobs/quilt-writer.ts";
import { QuiltLog } from "../actors/relayer/remember-job.quilts.ts";
import { ActorHost } from "../actors/host.ts";
import { rememberJobActor } from "../actors/relayer/remember-job.actor.ts";
import { restoreJobActor } from "../actors/relayer/restore-job.actor.ts";
import { IndexLog } from "../projections/relayer/index-log.ts";
import { LIVE, ProjectionGroupRunner, ProjectionRunner, bySubjects, migrateCheckpoints, type ProjectionHandle } from "../projections/runtime.ts";
import { relayerProjections } from "./read-models.ts";
import { LexicalKeyring } from "../adapters/lexical/keys.ts";
import { hybridSettings, lexicalSecretFor } from "./lexical.ts";
import { startAlerting } from "./alerting.ts";
import { createRelayerServer } from "../gateway/relayer/routes.ts";
import { SignedAuth } from "../gateway/relayer/signed-auth.ts";
import { KvNonceStore, nonceTtlSecs } from "../gateway/relayer/nonce-store.ts";
import { startSidecarWatchdog, type SidecarLink } from "../gateway/relayer/mcp-routes.ts";
import { startSidecar } from "../mcp/sidecar/server.ts";
import { DelegateVault } from "../adapters/oauth/delegate-vault.ts";
import { sidecarSettings } from "../mcp/sidecar/settings.ts";
import { Sponsorship } from "../actors/relayer/sponsorship.ts";
import { SponsorBindings } from "../adapters/sponsor/bindings.ts";
import { SPONSOR_LIMITS } from "../schemas/relayer/sponsor.ts";
import type { SecretKeyInput } from "../adapters/chain/sui/keys.ts";
import { registrationChain, sponsorshipPort } from "./sponsorship.ts";
import { signatureVerifier } from "../gateway/relayer/signature-verifier.ts";

export interface RelayerPorts {
  readonly chain: ChainPort;
  readonly encryption: EncryptionPort;
  readonly blobs: BlobPort;
  readonly embedder: EmbeddingPort;
  /** The gas station behind /sponsor (unless SPONSOR_API_KEY names a provider): the chain executing sponsored transactions and the key paying their gas. */
  readonly sponsor?: { readonly chain: SponsoredChainPort; readonly key: SecretKeyInput };
}

export interface RelayerRoles {
  readonly gateway?: boolean;
  readonly actors?: boolean;
  readonly projections?: boolean;
  /** The MCP sidecar (needs SIDECAR_AUTH_TOKEN); with the gateway in the same process it serves that gateway. */
  readonly mcp?: boolean;
}

export interface RelayerStack {
  readonly port: number;
  readonly projections: readonly ProjectionHandle[];
  readonly actorHost?: ActorHost<never>;
  /** Where the MCP sidecar this process started (or the gateway forwards to) listens. */
  readonly sidecarUrl: () => string;
  stop(): Promise<void>;
}

/**
 * How blob records are batched. On the local profile one transaction in flight makes bigger batches (measured
 * faster). Where finality takes time (a network profile), one transaction per wallet in flight (a wallet's coin serves
 * one at a time), and a batch's first record waits RECORD_GATHER_MS for the others of its quilt, whose jobs resume
 * together and reach the batcher spread over tens of milliseconds: one transaction (its gas) per quilt instead of one
 * per wallet free at that moment (bench/NOTES.md, issue 31).
 */
function recordBatching(config: RelayerConfig, wallets: WalletPool) {
  return config.networkProfile.name === "local" ? { maxInFlight: 1 } : { maxInFlight: wallets.size, gatherMs: RECORD_GATHER_MS, maxBatch: NETWORK_RECORD_BATCH };
}
const RECORD_GATHER_MS = 50;
/**
 * Records per transaction where finality takes time: wallets × this ÷ finality bounds the records a relayer makes per
 * second (4 wallets × 64 ÷ ~0.7 s ≈ 365/s was the bound the network bench met). A Sui transaction takes up to 1,024
 * commands; 256 record calls are ~30 KB of its 128 KiB.
 */
const NETWORK_RECORD_BATCH = 256;

/**
 * Remember jobs one actor host runs at once: enough that the embedder always has a batch for every model thread while
 * earlier jobs encrypt and commit. A job waiting on its quilt's store or its record's finality is parked
 * (EffectMeta.waitsOnly) and holds no slot, so the network's seconds do not count here.
 */
const REMEMBER_JOBS_RUNNING = 128;

/**
 * Remember jobs held at most (running, parked, queued; the consumer's max_ack_pending, shared by every actor host):
 * jobs held = throughput × time held (Little's law). A job is held ~1–2 s locally and ~5–9 s under a network profile
 * (a quilt's store, a record's finality); 2,048 held capped the network bench at 2,048 ÷ 5.8 s ≈ 350/s with CPU to
 * spare (bench/NOTES.md, issue 31, stop 40), so a network profile holds 8,192. What a host's memory needs is bounded
 * apart, in bytes (REMEMBER_JOBS_HELD_BYTES).
 */
function rememberJobsHeld(config: RelayerConfig): number {
  return config.networkProfile.name === "local" ? 512 : 8_192;
}

/**
 * Command bytes one actor host holds at most in remember jobs (ActorHostOptions.maxHeldBytes): `rememberJobsHeld`
 * counts commands, and each carries its text (up to 1 MiB) until it is answered, its ciphertext beside it once
 * encrypted. 128 MiB is 8,192 commands of 16 KiB, or 128 of the longest texts.
 */
const REMEMBER_JOBS_HELD_BYTES = 128 * 1024 * 1024;

export async function startRelayer(opts: {
  config: RelayerConfig;
  log: EventLog;
  db: Db;
  ports: RelayerPorts;
  logger: Logger;
  roles?: RelayerRoles;
  actorConcurrency?: number;
  attemptDelayMs?: number;
  embedderMode?: string;
  /** Server secret of the keyed lexical index; default: MEMRELAY_LEXICAL_KEY, else the data dir's lexical.key. */
  lexicalSecret?: Uint8Array;
  /** What happens when the sidecar watchdog gives up (the CLI exits the process); default: logged. */
  onSidecarLost?: () => void;
  env?: Record<string, string | undefined>;
}): Promise<RelayerStack> {
  const { config, log, db, ports, logger } = opts;
  const roles = { gateway: true, actors: true, projections: true, mcp: false, ...opts.roles };
  const stops: (() => Promise<void> | void)[] = [];
  const runners: ProjectionHandle[] = [];
  let actorHost: ActorHost<never> | undefined;
  let port = 0;
  // The sidecar's address is known once it listens (port 0 in tests): the gateway reads it per request.
  let sidecarUrl = config.sidecar.url;
  const sidecar: SidecarLink = { url: () => sidecarUrl, token: config.sidecar.authToken };
  // Every embedding of this process goes through one scheduler: queries first, documents least-served first, a deadline each.
  const embedding = createScheduler(ports.embedder, config.embedding);
  // In the roles that embed, load a local model on every thread now: a thread loading its weights (seconds) on the
  // first request it gets would hold that request, and the requests behind it, as long.
  if (roles.gateway || roles.actors || roles.mcp) void ports.embedder.warmUp?.().catch((err) => logger.warn("embedder warm-up failed; the first embeddings will retry", { error: err instanceof Error ? err.message : String(err) }));

  // A role that fails to start stops the ones already running: nothing keeps the process alive without a relayer.
  try {
    // One pool for the process: the record batcher's and the gateway's manual records (a wallet's gas coin serves one
    // transaction at a time), judged stalled from the first transaction on against the network's published finality.
    const wallets = roles.actors ? new WalletPool(config.serverChainPrivateKeys, { expectedCallMs: expectedTxMs(config.network, config.networkProfile) }) : undefined;
    const sponsor = sponsorshipPort(config, ports.sponsor);
    // Actors hash memories' terms, the gateway and the MCP sidecar the queries' terms: all need the same lexical key.
    const lexical = roles.actors || roles.gateway || roles.mcp ? new LexicalKeyring(opts.lexicalSecret ?? lexicalSecretFor(config, logger)) : undefined;
    // What recall ranks with, for the gateway's route and the sidecar's memory_recall alike.
    const recallLexical = lexical && { keyring: lexical, settings: config.recallRanking === "hybrid" ? hybridSettings(config, ports.embedder) : undefined };
    // Recall, ask, stats and job lookups (the gateway's and the sidecar's) may read from DATABASE_READ_URLS.
    const reads = roles.gateway || roles.mcp ? new ReadPool(db, config.databaseRead.urls, config.databaseRead, logger.child({ component: "read-pool" })) : undefined;
    if (reads) stops.push(() => reads.close());
    // Alerting first: the webhook's durable consumer must exist before the first alert can be published.
    const alerting = await startAlerting({ config, log, chain: ports.chain, logger, uploaders: wallets?.wallets.map((w) => w.address) ?? [], webhook: !!roles.projections, monitor: !!roles.actors });
    stops.push(() => alerting.stop());
    if (roles.projections) {
      await migrateCheckpoints(db);
      // The read models of one subject family share a consumer: every remember job's commits reach this process
      // and are decoded once, not once per read model.
      for (const family of bySubjects(relayerProjections(ports.embedder.dims, { log, network: ports.chain.network }, ports.embedder.name))) {
        const network = ports.chain.network;
        const r = family.length === 1
          ? new ProjectionRunner(log, db, family[0], logger.child({ projection: family[0].name }), network)
          : new ProjectionGroupRunner(log, db, family, logger, network, LIVE);
        await r.start();
        runners.push(...(r instanceof ProjectionGroupRunner ? r.handles() : [r]));
        stops.push(() => r.stop());
      }
    }
    if (roles.actors) {
      const storeMode = config.storeMode;
      // The quilts' log is there in either mode: a job that joined a quilt under quilt mode finds its fate after a restart.
      const quiltLog = new QuiltLog(log, (patches) => ports.blobs.storeQuilt(patches));
      const quilts = storeMode.mode === "quilt" ? new QuiltWriter((patches) => ports.blobs.storeQuilt(patches), quiltLog, storeMode.limits) : undefined;
      // Stops run in reverse: the host stops first, then what its jobs gathered is sent rather than dropped.
      if (quilts) stops.push(() => quilts.drain());
      const host = new ActorHost(
        log,
        rememberJobActor({
          embedder: embedding,
          encryption: ports.encryption,
          blobs: ports.blobs,
          quilts,
          quiltLog,
          records: new RecordBatcher(registrationChain(config, ports.chain, sponsor, logger), wallets!, recordBatching(config, wallets!)),
          wallets: wallets!,
          lexical,
          attemptDelayMs: opts.attemptDelayMs ?? 200,
          storeTimeoutMs: config.blobstoreStoreTimeoutMs,
        }),
        logger.child({ actor: "remember-job" }),
        { concurrency: opts.actorConcurrency ?? REMEMBER_JOBS_RUNNING, maxHeld: rememberJobsHeld(config), maxHeldBytes: REMEMBER_JOBS_HELD_BYTES, network: ports.chain.network },
      );
      await host.start();
      actorHost = host as unknown as ActorHost<never>;
      stops.push(() => host.stop());
      // Restores are few and long (download, decrypt, embed whole namespaces): a handful at a time, a long effect budget
      // (the host keeps each alive while it runs, so the ack wait stays short).
      const restores = new ActorHost(
        log,
        restoreJobActor({ chain: ports.chain, blobs: ports.blobs, encryption: ports.encryption, embedder: embedding, db, index: new IndexLog(log, db), lexical }, logger.child({ actor: "restore-job" })),
        logger.child({ actor: "restore-job" }),
        { concurrency: 4, network: ports.chain.network, effectTimeoutMs: 600_000 },
      );
      await restores.start();
      stops.push(() => restores.stop());
    }
    if (roles.gateway) {
      const nonces = new KvNonceStore(await openNonceStore(log, nonceTtlSecs(config.authMaxClockDriftSecs)));
      const verifier = signatureVerifier(config.gatewayVerifyThreads);
      stops.push(() => verifier.close());
      const server = createRelayerServer({
        config,
        log,
        db,
        reads,
        auth: new SignedAuth(ports.chain, nonces, config.authMaxClockDriftSecs, COMMAND_DEDUP_WINDOW_SECS, verifier),
        chain: ports.chain,
        embedder: embedding,
        blobs: ports.blobs,
        encryption: ports.encryption,
        wallets,
        logger: logger.child({ component: "gateway" }),
        embedderMode: opts.embedderMode ?? `local (${ports.embedder.name})`,
        lexical: recallLexical,
        projectionRunners: () => runners,
        embedding,
        llm: createLanguageModel(config.llm),
        sidecar,
        oauth: config.oauth && { settings: config.oauth, vault: await DelegateVault.open(log, config.oauth.key) },
      });
      port = await server.listen(config.host, config.port).catch(namingAddressVariable("PORT"));
      stops.push(() => server.close());
    }
    if (roles.mcp) {
      const settings = sidecarSettings(opts.env ?? process.env, {
        url: config.sidecar.url,
        sessions: config.mcpSessions,
        ...(config.sidecar.authToken ? { authToken: config.sidecar.authToken } : {}),
        ...(roles.gateway ? { relayerUrl: `http://${config.host}:${port}` } : {}),
      });
      const sponsorship = sponsor && new Sponsorship({
        bindings: await SponsorBindings.open(log, { nonceTtlMs: (2 * config.authMaxClockDriftSecs + 60) * 1000, bindingTtlMs: SPONSOR_LIMITS.bindingTtlMs }),
        provider: sponsor,
        packageId: ports.chain.packageId,
        clockWindowSecs: config.authMaxClockDriftSecs,
        transientRetry: config.sponsorTransientRetry,
      });
      const mcp = await startSidecar(settings, logger.child({ component: "mcp-sidecar" }), {
        sponsorship,
        recall: { chain: ports.chain, ports: { db, reads, embedder: embedding, blobs: ports.blobs, encryption: ports.encryption, lexical: recallLexical } },
      });
      sidecarUrl = `http://${settings.url.hostname}:${mcp.port}`;
      stops.push(() => mcp.close());
    }
    if (roles.gateway && sidecar.token) {
      stops.push(startSidecarWatchdog(sidecar, config.sidecar, logger, opts.onSidecarLost ?? (() => undefined)));
    }
  } catch (err) {
    for (const stop of stops.reverse()) await Promise.resolve(stop()).catch(() => undefined);
    throw err;
  }
  return {
    port,
    projections: runners,
    actorHost,
    sidecarUrl: () => sidecarUrl,
    stop: async () => {
      // Every role is stopped even if one fails to: a role left running keeps retrying against closed connections.
      for (const s of stops.reverse()) await Promise.resolve(s()).catch((err) => logger.warn("a role did not stop cleanly", { error: err instanceof Error ? err.message : String(err) }));
    },
  };
}
