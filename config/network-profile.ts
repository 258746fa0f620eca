// How far away the local stack pretends the network is (MEMRELAY_NETWORK_PROFILE). `local` is the stack as it always
// was: every part answers at once. The other profiles give the local ledger, the local storage nodes and the blob
// store's Walrus publisher the latencies of Sui and Walrus as published (figures and sources: docs/network-profile.md),
// and turn on Sui's owned-object rule, so that what is measured here is what a user of the real network would see.
// A profile only ever sleeps: the figures are waits, never work.

/** A latency drawn uniformly between its bounds (ms): the spread is the jitter. */
export interface LatencyRange {
  readonly minMs: number;
  readonly maxMs: number;
}

export interface NetworkProfile {
  readonly name: NetworkProfileName;
  /** Submit → effects of a transaction whose inputs are owned objects only (Sui's fast path), e.g. record_blob. */
  readonly ownedTxFinality: LatencyRange;
  /** Submit → effects of a transaction through consensus (shared objects: Walrus's register_blob and certify_blob). */
  readonly sharedTxFinality: LatencyRange;
  /** One request to one storage node writing metadata or a sliver (the publisher's writes go to all nodes in parallel). */
  readonly storageNodeWrite: LatencyRange;
  /** One read from a storage node (an aggregator reads the slivers it needs in parallel). */
  readonly storageNodeRead: LatencyRange;
  /**
   * Sui's owned-object rule: a transaction whose owned input (its gas coin) is held by another transaction still in
   * flight is refused, as validators refuse an equivocating transaction.
   */
  readonly ownedObjectLocks: boolean;
  /**
   * Sub-wallets of the Walrus publisher (its `--n-clients`, 8 by default): each of its register and certify
   * transactions holds one for its finality (a sub-wallet's coins are owned objects), so a publisher has at most this
   * many transactions in flight and further stores wait for a free one. 0: no limit (the `local` profile).
   */
  readonly publisherSubWallets: number;
  /**
   * Wallets whose transactions hang (MEMRELAY_NETWORK_STALLED_WALLETS, addresses): submitted, their coin locked, and
   * never final, as when a wallet's RPC or its validators stop answering (a SIGSTOP of its signer looks the same).
   * For measuring that one stalled wallet does not hold the others; empty unless set.
   */
  readonly stalledWallets: ReadonlySet<string>;
  /**
   * A file (MEMRELAY_NETWORK_STALL_SWITCH): when set, the stalled wallets hang only while it exists, so a measurement
   * can warm up with every wallet healthy in the same process and stall one afterwards; unset, from the start.
   */
  readonly stallSwitch?: string;
}

export const NETWORK_PROFILE_NAMES = ["local", "testnet", "mainnet"] as const;
export type NetworkProfileName = (typeof NETWORK_PROFILE_NAMES)[number];

const none: LatencyRange = { minMs: 0, maxMs: 0 };
const noStalls: ReadonlySet<string> = new Set();
/** Walrus's publisher creates 8 sub-wallets unless told otherwise (`walrus publisher --n-clients`). */
const WALRUS_PUBLISHER_SUB_WALLETS = 8;

export const NETWORK_PROFILES: Readonly<Record<NetworkProfileName, NetworkProfile>> = {
  local: { name: "local", ownedTxFinality: none, sharedTxFinality: none, storageNodeWrite: none, storageNodeRead: none, ownedObjectLocks: false, publisherSubWallets: 0, stalledWallets: noStalls },
  // Testnet: slower and more variable validators than mainnet; a public storage-node committee spread over regions.
  testnet: {
    name: "testnet",
    ownedTxFinality: { minMs: 400, maxMs: 900 },
    sharedTxFinality: { minMs: 600, maxMs: 3_000 },
    storageNodeWrite: { minMs: 150, maxMs: 900 },
    storageNodeRead: { minMs: 80, maxMs: 500 },
    ownedObjectLocks: true,
    publisherSubWallets: WALRUS_PUBLISHER_SUB_WALLETS,
    stalledWallets: noStalls,
  },
  mainnet: {
    name: "mainnet",
    ownedTxFinality: { minMs: 350, maxMs: 600 },
    sharedTxFinality: { minMs: 500, maxMs: 1_500 },
    storageNodeWrite: { minMs: 100, maxMs: 600 },
    storageNodeRead: { minMs: 50, maxMs: 300 },
    ownedObjectLocks: true,
    publisherSubWallets: WALRUS_PUBLISHER_SUB_WALLETS,
    stalledWallets: noStalls,
  },
};

/**
 * MEMRELAY_NETWORK_PROFILE (default `local`); an unknown name is refused, not silently treated as local.
 * MEMRELAY_NETWORK_STALLED_WALLETS: Sui addresses (0x + 64 hex, comma-separated) whose transactions hang;
 * MEMRELAY_NETWORK_STALL_SWITCH: a file path, while which exists they do (unset: always).
 */
export function networkProfileFromEnv(env: Readonly<Record<string, string | undefined>>): NetworkProfile {
  const raw = env.MEMRELAY_NETWORK_PROFILE?.trim().toLowerCase() || "local";
  const name = NETWORK_PROFILE_NAMES.find((n) => n === raw);
  if (!name) throw new Error(`MEMRELAY_NETWORK_PROFILE must be one of ${NETWORK_PROFILE_NAMES.join(", ")}, not "${raw}"`);
  const stalled = (env.MEMRELAY_NETWORK_STALLED_WALLETS ?? "").split(",").map((a) => a.trim().toLowerCase()).filter(Boolean);
  const bad = stalled.find((a) => !/^0x[0-9a-f]{64}$/.test(a));
  if (bad !== undefined) throw new Error(`MEMRELAY_NETWORK_STALLED_WALLETS must list Sui addresses (0x + 64 hex), not "${bad}"`);
  const stallSwitch = env.MEMRELAY_NETWORK_STALL_SWITCH?.trim() || undefined;
  return stalled.length ? { ...NETWORK_PROFILES[name], stalledWallets: new Set(stalled), stallSwitch } : NETWORK_PROFILES[name];
}

/**
 * What a healthy owned-object transaction (a gas coin, e.g. record_blob) is expected to take on the network a relayer
 * writes to, before it has seen any (ms): the slowest finality published for it. CHAIN_NETWORK=localnet is the local
 * ledger, as fast as its profile makes it (`local`: at once); testnet and mainnet are the real networks, whose
 * published figures the profiles of those names carry; any other network has no figure here (undefined).
 */
export function expectedTxMs(network: string, profile: NetworkProfile): number | undefined {
  if (network === "localnet") return profile.ownedTxFinality.maxMs;
  const published = NETWORK_PROFILE_NAMES.find((n) => n === network && n !== "local");
  return published && NETWORK_PROFILES[published].ownedTxFinality.maxMs;
}
