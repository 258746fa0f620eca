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
}

export const NETWORK_PROFILE_NAMES = ["local", "testnet", "mainnet"] as const;
export type NetworkProfileName = (typeof NETWORK_PROFILE_NAMES)[number];

const none: LatencyRange = { minMs: 0, maxMs: 0 };

export const NETWORK_PROFILES: Readonly<Record<NetworkProfileName, NetworkProfile>> = {
  local: { name: "local", ownedTxFinality: none, sharedTxFinality: none, storageNodeWrite: none, storageNodeRead: none, ownedObjectLocks: false },
  // Testnet: slower and more variable validators than mainnet; a public storage-node committee spread over regions.
  testnet: {
    name: "testnet",
    ownedTxFinality: { minMs: 400, maxMs: 900 },
    sharedTxFinality: { minMs: 600, maxMs: 3_000 },
    storageNodeWrite: { minMs: 150, maxMs: 900 },
    storageNodeRead: { minMs: 80, maxMs: 500 },
    ownedObjectLocks: true,
  },
  mainnet: {
    name: "mainnet",
    ownedTxFinality: { minMs: 350, maxMs: 600 },
    sharedTxFinality: { minMs: 500, maxMs: 1_500 },
    storageNodeWrite: { minMs: 100, maxMs: 600 },
    storageNodeRead: { minMs: 50, maxMs: 300 },
    ownedObjectLocks: true,
  },
};

/** MEMRELAY_NETWORK_PROFILE (default `local`); an unknown name is refused, not silently treated as local. */
export function networkProfileFromEnv(env: Readonly<Record<string, string | undefined>>): NetworkProfile {
  const raw = env.MEMRELAY_NETWORK_PROFILE?.trim().toLowerCase() || "local";
  const name = NETWORK_PROFILE_NAMES.find((n) => n === raw);
  if (!name) throw new Error(`MEMRELAY_NETWORK_PROFILE must be one of ${NETWORK_PROFILE_NAMES.join(", ")}, not "${raw}"`);
  return NETWORK_PROFILES[name];
}
