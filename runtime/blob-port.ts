// The relayer's blob port from the operator variables: publisher and aggregators (BLOBSTORE_*), racing, the
// ciphertext cache (BLOB_CACHE_*), and the consistency check of cold reads by the network's blob ids
// (BLOBSTORE_SKIP_CONSISTENCY_CHECK): Walrus's ids (WALRUS_N_SHARDS) on the public Walrus networks, our blob store's
// elsewhere (localnet, or a private network name running this project's blob store).
import type { RelayerConfig } from "../config/env.ts";
import { WalrusHttpBlobs } from "../adapters/blobs/walrus-http.ts";
import { sha256BlobIds, walrusBlobIds } from "../adapters/blobs/blob-ids.ts";

/** Networks whose blobs live on Walrus itself. */
const WALRUS_NETWORKS: ReadonlySet<string> = new Set(["mainnet", "testnet"]);

export function blobPortFrom(config: RelayerConfig, opts: { publisherUrl?: string; aggregatorUrl?: string; cache?: boolean } = {}): WalrusHttpBlobs {
  const cache = opts.cache ?? true;
  return new WalrusHttpBlobs({
    publisherUrl: opts.publisherUrl ?? config.blobstorePublisherUrl,
    aggregatorUrl: opts.aggregatorUrl ?? config.blobstoreAggregatorUrl,
    extraAggregatorUrls: config.blobstoreAggregatorUrls,
    raceAfterMs: config.blobstoreAggregatorRaceAfterMs,
    storeTimeoutMs: config.blobstoreStoreTimeoutMs,
    cacheTtlSecs: cache ? config.blobCacheTtlSecs : 0,
    cacheMaxBytes: cache ? config.blobCacheMaxBytes : 0,
    quiltShards: config.walrusShards,
    ...(config.blobstoreSkipConsistencyCheck ? {} : { verify: WALRUS_NETWORKS.has(config.network) ? walrusBlobIds(config.walrusShards) : sha256BlobIds }),
  });
}
