// One call that brings up the local encryption backend: an object registry (the ledger's, or an in-memory one),
// the Sui JSON-RPC subset over it, and n key servers whose objects and the memory package are published there.
// Unmodified @mysten/sui / @mysten/seal client code pointed at `rpcUrl` with `serverConfigs` then just works.

import { join } from "node:path";
import { normalizeSuiAddress } from "@mysten/sui/utils";
import { MemoryObjectSource, packageObject, sealApproveFunction, type ChainObject, type ObjectSource } from "../../chain/local/rpc/objects.ts";
import { startChainRpcServer, type ChainRpcServerHandle, type ChainRpcServerOptions } from "../../chain/local/rpc/server.ts";
import { ledgerObjectSource, type LedgerAccounts, type LedgerObjectReader } from "../../chain/local/rpc/ledger-source.ts";
import type { LedgerTransactions } from "../../chain/local/rpc/transactions.ts";
import { keyServerLedgerInput } from "./onchain.ts";
import { startKeyServerCluster, type KeyServerCluster } from "./cluster.ts";
import type { IsAuthorized } from "./server.ts";

export type ObjectRegistry = ObjectSource & { putObject(o: ChainObject): unknown };

export interface LocalEncryptionStackOptions {
  /** Directory for key-server master keys (and the object file when no registry is given). */
  readonly dir: string;
  /** The memory package id (identities are `package ‖ owner ‖ key id`). */
  readonly packageId: string;
  readonly isAuthorized: IsAuthorized;
  /** Number of key servers (default 3). */
  readonly count?: number;
  /** An object registry of ChainObjects; default: a file-backed MemoryObjectSource in `dir`. */
  readonly objects?: ObjectRegistry;
  /**
   * The local ledger instead (its put_object form): key servers are published with `putObject(id, input)` and the
   * RPC reads through `ledgerObjectSource` (the package object is served as version 1 if the ledger has none).
   */
  readonly ledger?: LedgerObjectReader & {
    putObject(objectId: string, input: ReturnType<typeof keyServerLedgerInput>["input"]): Promise<unknown>;
  };
  /** The ledger's accounts and registry, served as `account::MemWalAccount` / `AccountRegistry` objects. */
  readonly accounts?: LedgerAccounts;
  /** The ledger's transactions and network, so the started RPC also executes and reads transactions. */
  readonly transactions?: LedgerTransactions & { readonly network: string };
  /** When the ledger already serves the JSON-RPC subset, its URL; otherwise one is started over `objects`. */
  readonly rpcUrl?: string;
  readonly host?: string;
  readonly rpcPort?: number;
  /** Further routes on the started RPC listener (the local sponsorship provider). */
  readonly rpcRoutes?: ChainRpcServerOptions["routes"];
  readonly keyServerPorts?: readonly number[];
}

export interface LocalEncryptionStack {
  readonly packageId: string;
  /** The ledger's JSON-RPC endpoint. */
  readonly rpcUrl: string;
  /** The ledger's gRPC-web endpoint (the same listener as rpcUrl when this stack started it): CHAIN_GRPC_URL. */
  readonly grpcUrl: string;
  /** What the RPC server reads. */
  readonly objects: ObjectSource;
  /** The ChainObject registry when no ledger was given (tests put extra objects here). */
  readonly registry: ObjectRegistry | undefined;
  readonly cluster: KeyServerCluster;
  readonly serverConfigs: readonly { objectId: string; weight: number }[];
  close(): Promise<void>;
}

export async function startLocalEncryptionStack(opts: LocalEncryptionStackOptions): Promise<LocalEncryptionStack> {
  const packageId = normalizeSuiAddress(opts.packageId);
  if (opts.ledger && opts.objects) throw new Error("pass either objects or ledger");
  const registry = opts.ledger ? undefined : (opts.objects ?? new MemoryObjectSource({ file: join(opts.dir, "objects.jsonl") }));
  const objects: ObjectSource = registry ?? ledgerObjectSource(opts.ledger!, { packageIds: [packageId], ...(opts.accounts ? { accounts: opts.accounts } : {}) });
  if (registry && !(await registry.getObject(packageId))) {
    await registry.putObject(packageObject(packageId, { "account::seal_approve": sealApproveFunction(packageId) }));
  }
  let rpc: ChainRpcServerHandle | undefined;
  if (!opts.rpcUrl) rpc = await startChainRpcServer({ objects, host: opts.host, port: opts.rpcPort, transactions: opts.transactions, chainName: opts.transactions?.network, routes: opts.rpcRoutes });
  let cluster: KeyServerCluster;
  try {
    cluster = await startKeyServerCluster({
      dir: join(opts.dir, "keyservers"),
      count: opts.count,
      packageIds: [packageId],
      isAuthorized: opts.isAuthorized,
      host: opts.host,
      ports: opts.keyServerPorts,
    });
  } catch (e) {
    await rpc?.close();
    throw e;
  }
  try {
    if (registry) await cluster.publish(registry);
    else {
      const version = String(Math.floor(Date.now() / 1000));
      for (const [i, s] of cluster.servers.entries()) {
        const { objectId, input } = keyServerLedgerInput({ objectId: s.objectId, name: `memrelay-local-${i}`, url: s.url, publicKey: s.publicKey }, { version });
        await opts.ledger!.putObject(objectId, input);
      }
    }
  } catch (e) {
    await cluster.close();
    await rpc?.close();
    throw e;
  }
  return {
    packageId,
    rpcUrl: opts.rpcUrl ?? rpc!.url,
    grpcUrl: opts.rpcUrl ?? rpc!.grpcUrl,
    objects,
    registry,
    cluster,
    serverConfigs: cluster.serverConfigs,
    close: async () => {
      await cluster.close();
      await rpc?.close();
    },
  };
}
