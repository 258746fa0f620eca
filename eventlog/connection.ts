// Connects to NATS and declares the streams of the event log. Stream settings live here, in one place.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, RetentionPolicy, StorageType, DiscardPolicy, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { Kvm, type KV, type KvOptions } from "@nats-io/kv";
import { STREAMS, SUBJECTS, KV_BUCKETS } from "./subjects.ts";
import { isStreamOrConsumerMissing } from "./jetstream-errors.ts";
import { replicationRefusal } from "./nats-version.ts";

export interface EventLog {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly kvm: Kvm;
  readonly snapshots: KV;
  /** Copies of each stream and KV bucket this connection creates; undefined: whatever the existing ones have. */
  readonly replicas?: number;
  close(): Promise<void>;
}

export interface EventLogOptions {
  /** One URL, or several separated by commas (the nodes of a cluster: the client fails over between them). */
  readonly servers: string;
  readonly name: string;
  /** Seconds a nonce record lives: 2 x clock window + 300 (spec, Authentication rule 6). */
  readonly nonceTtlSecs?: number;
  /**
   * Copies of every stream and KV bucket (NATS_REPLICAS: 3 on a three-node cluster). Left out (an operator command, a
   * process started without NATS_REPLICAS), new ones get one copy and existing ones keep theirs: nothing but an
   * explicit setting scales an R3 deployment's streams down.
   */
  readonly replicas?: number;
}

const SECOND_NS = 1_000_000_000;

export async function openEventLog(opts: EventLogOptions): Promise<EventLog> {
  const nc = await connect({
    servers: opts.servers.split(",").map((s) => s.trim()).filter(Boolean),
    name: opts.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    pingInterval: 5_000,
    // Request errors need no async stack of the caller; capturing one costs an Error per request on the hot path.
    noAsyncTraces: true,
  });
  const refusal = (opts.replicas ?? 1) > 1 ? replicationRefusal(nc.info?.version ?? "") : undefined;
  if (refusal) {
    await nc.close();
    throw new Error(refusal);
  }
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  await ensureStreams(jsm, opts.replicas);
  const kvm = new ReplicatedKvm(nc, opts.replicas);
  const snapshots = await kvm.create(KV_BUCKETS.snapshots, { history: 1 });
  return {
    nc,
    js,
    jsm,
    kvm,
    snapshots,
    replicas: opts.replicas,
    close: async () => {
      await nc.drain().catch(() => nc.close());
    },
  };
}

/**
 * How long the work queue remembers a command id. Longer than a signed request's replay window at the default clock
 * drift (2 × 300 s) with a margin, so a route may use the request's nonce as its command's id and let the queue refuse
 * a replay (gateway/relayer/signed-auth.ts, nonceInCommand).
 */
export const COMMAND_DEDUP_WINDOW_SECS = 11 * 60;

/**
 * KV buckets created through the event log get its replicas unless the caller names them: the modules that open a
 * bucket (nonces, alert dedup, sponsor bindings, OAuth vault…) need not know how many copies the deployment keeps.
 * An existing bucket is opened as it is (the KV client never updates one).
 */
class ReplicatedKvm extends Kvm {
  constructor(
    nc: NatsConnection,
    private readonly replicas: number | undefined,
  ) {
    super(nc);
  }

  override create(name: string, opts: Partial<KvOptions> = {}): Promise<KV> {
    return super.create(name, this.replicas === undefined ? opts : { replicas: this.replicas, ...opts });
  }
}

/** `replicas` undefined: new streams get one copy and existing ones keep theirs. */
export async function ensureStreams(jsm: JetStreamManager, replicas: number | undefined): Promise<void> {
  const specs = [
    {
      name: STREAMS.commands,
      subjects: [SUBJECTS.commands],
      retention: RetentionPolicy.Workqueue,
      duplicate_window: COMMAND_DEDUP_WINDOW_SECS * SECOND_NS,
    },
    { name: STREAMS.events, subjects: [SUBJECTS.events], retention: RetentionPolicy.Limits, duplicate_window: 10 * 60 * SECOND_NS },
    // Alerts are low-volume; a day of msg-id dedup lets a publisher retry (or a projection redo a batch after a
    // long Postgres outage) without storing an alert twice.
    { name: STREAMS.alerts, subjects: [SUBJECTS.alerts], retention: RetentionPolicy.Limits, max_age: 30 * 24 * 3600 * SECOND_NS, duplicate_window: 24 * 3600 * SECOND_NS },
    { name: STREAMS.chain, subjects: [SUBJECTS.chain], retention: RetentionPolicy.Limits, duplicate_window: 10 * 60 * SECOND_NS },
    { name: STREAMS.deadLetters, subjects: [SUBJECTS.deadLetters], retention: RetentionPolicy.Limits, max_age: 30 * 24 * 3600 * SECOND_NS, duplicate_window: 24 * 3600 * SECOND_NS },
  ];
  for (const spec of specs) {
    const config = { ...spec, storage: StorageType.File, discard: DiscardPolicy.Old, num_replicas: replicas ?? 1 };
    try {
      const existing = await jsm.streams.info(spec.name);
      await jsm.streams.update(spec.name, { ...config, num_replicas: replicas ?? existing.config.num_replicas });
    } catch (err) {
      if (!isStreamOrConsumerMissing(err)) throw err;
      await jsm.streams.add(config);
    }
  }
}

/** The nonce store: a KV bucket whose records expire after the replay window; `create` is set-if-absent. */
export async function openNonceStore(log: EventLog, ttlSecs: number): Promise<KV> {
  return log.kvm.create(KV_BUCKETS.nonces, { history: 1, ttl: ttlSecs * 1000 });
}

