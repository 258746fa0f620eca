// The local stack's Walrus: the storage-node committee (local-committee.ts) started in the data directory, checking
// registrations against the ledger, and its deployment published on the ledger by the operator, so an unmodified
// `WalrusClient` given `packageConfig` and the ledger's JSON-RPC writes and reads blobs with them.
import { localWalrusPackageConfig, parseSystemInnerField, systemInnerFieldId, walrusDeploymentObjects } from "../chain/local/walrus-deployment.ts";
import type { PutObjectInput } from "../chain/local/local-chain.ts";
import type { WalrusRegistration } from "../chain/local/walrus-layouts.ts";
import { startLocalCommittee, type LocalCommittee, type LocalCommitteeOptions } from "./local-committee.ts";

/** What a WalrusClient is given for the local network (with `storageNodeUrlScheme: "http"`). */
export interface WalrusPackageConfig {
  readonly systemObjectId: string;
  readonly stakingPoolId: string;
}

export interface LocalWalrus {
  readonly committee: LocalCommittee;
  readonly packageConfig: WalrusPackageConfig;
  close(): Promise<void>;
}

export interface LocalWalrusLedger {
  readonly network: string;
  putObject(objectId: string, input: PutObjectInput): Promise<unknown>;
  walrusBlobRegistrations(blobId: string): Promise<readonly WalrusRegistration[]>;
  getObject(objectId: string): Promise<{ readonly bcs?: string } | null>;
}

export async function startLocalWalrus(opts: {
  ledger: LocalWalrusLedger;
  dir: string;
  host?: string;
  count?: number;
  nShards?: number;
  ports?: readonly number[];
  latency?: LocalCommitteeOptions["latency"];
}): Promise<LocalWalrus> {
  const committee = await startLocalCommittee({
    dir: opts.dir,
    network: opts.ledger.network,
    count: opts.count,
    nShards: opts.nShards,
    host: opts.host,
    ports: opts.ports,
    registrations: (blobId) => opts.ledger.walrusBlobRegistrations(blobId),
    latency: opts.latency,
  });
  try {
    // Publishing again (new node addresses) keeps the storage already reserved.
    const current = await opts.ledger.getObject(systemInnerFieldId(opts.ledger.network));
    const usedCapacity = current?.bcs ? parseSystemInnerField(new Uint8Array(Buffer.from(current.bcs, "base64"))).usedCapacity : 0n;
    for (const { objectId, input } of walrusDeploymentObjects({ ...committee.deployment, usedCapacity })) await opts.ledger.putObject(objectId, input);
  } catch (err) {
    await committee.close();
    throw err;
  }
  return { committee, packageConfig: localWalrusPackageConfig(opts.ledger.network), close: () => committee.close() };
}
