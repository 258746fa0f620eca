// A minimal Sui JSON-RPC 2.0 server over node:http, answering the subset of methods that `@mysten/sui`'s
// `SuiJsonRpcClient` (and through it `@mysten/seal`'s SessionKey.create / SealClient, and
// `Transaction.build({ onlyTransactionKind: true })` for seal_approve PTBs) call:
//
//   sui_getObject, sui_multiGetObjects        object reads (package version check, key-server objects, dynamic
//                                             fields by derived id, shared-object resolution for PTB inputs)
//   suix_getDynamicFieldObject               legacy dynamic-field read by (parent, name)
//   sui_getNormalizedMoveFunction            PTB argument resolution (tx.object / raw pure values)
//   sui_getChainIdentifier, sui_getCheckpoint chain identity ("0" checkpoint digest)
//   rpc.discover                             version
//   with a ledger (transactions.ts): sui_executeTransactionBlock, sui_getTransactionBlock, suix_getBalance,
//   suix_getReferenceGasPrice, suix_getOwnedObjects, and for transactions the SDK builds itself (gas, expiration):
//   sui_dryRunTransactionBlock, suix_getLatestSuiSystemState, suix_getCoins
//
// Everything else answers JSON-RPC error -32601. Objects come from an injected ObjectSource. `routes` lets a service
// beside the node share the listener (the local sponsorship provider's /v1/transaction-blocks/sponsor).
//
// The same listener answers Sui's gRPC API as gRPC-web (grpc-services.ts; requests with a grpc-web content type at
// /sui.rpc.v2.<Service>/<Method>), so `grpcUrl` (= `url`) is what CHAIN_GRPC_URL names.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fromBase58, fromBase64, isValidSuiObjectId, normalizeSuiAddress } from "@mysten/sui/utils";
import type { ChainObject, ChainOwner, DynamicFieldName, ObjectSource } from "./objects.ts";
import { RpcError, transactionMethods, type LedgerTransactions } from "./transactions.ts";
import { chainIdentifierDigest } from "../transaction-data.ts";
import { GRPC_WEB_CORS, grpcWebRoute } from "./grpc-web.ts";
import { ledgerGrpcMethods } from "./grpc-services.ts";

export interface ChainRpcServerOptions {
  readonly objects: ObjectSource;
  readonly host?: string;
  readonly port?: number;
  /** The network name; its chain identifier (digest of checkpoint 0) is what transactions must carry. */
  readonly chainName?: string;
  /** The ledger, to execute and read transactions and balances; without it only objects are served. */
  readonly transactions?: LedgerTransactions;
  /** Largest accepted request body. */
  readonly maxBodyBytes?: number;
  /** Other HTTP routes on this listener, asked first: true when one answered the request. */
  readonly routes?: (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;
}

export interface ChainRpcServerHandle {
  /** The JSON-RPC endpoint. */
  readonly url: string;
  /** The gRPC-web endpoint (the same listener): a SuiGrpcClient's baseUrl, CHAIN_GRPC_URL. */
  readonly grpcUrl: string;
  readonly server: Server;
  close(): Promise<void>;
}

interface ObjectDataOptions {
  showType?: boolean;
  showOwner?: boolean;
  showPreviousTransaction?: boolean;
  showDisplay?: boolean;
  showContent?: boolean;
  showBcs?: boolean;
  showStorageRebate?: boolean;
}

const JSON_RPC_VERSION = "1.60.0";
/** Browser dapps point Sui clients at full nodes directly; allow the same here. */
const CORS = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "POST, GET, OPTIONS",
  "access-control-allow-headers": `content-type, client-sdk-type, client-sdk-version, client-target-api-version, client-request-method, ${GRPC_WEB_CORS.allowHeaders}`,
} as const;

function ownerJson(owner: ChainOwner): unknown {
  switch (owner.kind) {
    case "Immutable":
      return "Immutable";
    case "AddressOwner":
      return { AddressOwner: owner.address };
    case "ObjectOwner":
      return { ObjectOwner: owner.address };
    case "Shared":
      return { Shared: { initial_shared_version: Number(owner.initialSharedVersion) } };
  }
}

function objectJson(o: ChainObject, opts: ObjectDataOptions = {}): Record<string, unknown> {
  const data: Record<string, unknown> = { objectId: o.objectId, version: o.version, digest: o.digest };
  if (opts.showType) data.type = o.type;
  if (opts.showOwner) data.owner = ownerJson(o.owner);
  if (opts.showPreviousTransaction) data.previousTransaction = o.previousTransaction ?? null;
  if (opts.showStorageRebate) data.storageRebate = "0";
  if (opts.showDisplay) data.display = { data: null, error: null };
  const isPackage = o.type === "package";
  if (opts.showBcs) {
    data.bcs = isPackage
      ? { dataType: "package", id: o.objectId, version: Number(o.version), moduleMap: {}, typeOriginTable: [], linkageTable: {} }
      : {
          dataType: "moveObject",
          type: o.type,
          hasPublicTransfer: o.hasPublicTransfer ?? false,
          version: Number(o.version),
          bcsBytes: Buffer.from(o.contents ?? new Uint8Array()).toString("base64"),
        };
  }
  if (opts.showContent) {
    data.content = isPackage
      ? { dataType: "package", disassembled: {} }
      : { dataType: "moveObject", type: o.type, hasPublicTransfer: o.hasPublicTransfer ?? false, fields: o.fields ?? {} };
  }
  return data;
}

function checkId(value: unknown, what = "object id"): string {
  if (typeof value !== "string" || !isValidSuiObjectId(normalizeSuiAddress(value))) throw new RpcError(-32602, `Invalid Params: invalid ${what}`);
  return normalizeSuiAddress(value);
}

export async function startChainRpcServer(opts: ChainRpcServerOptions): Promise<ChainRpcServerHandle> {
  const source = opts.objects;
  const maxBody = opts.maxBodyBytes ?? 1 << 20;
  const checkpointDigest = chainIdentifierDigest(opts.chainName ?? "memrelay-local");
  const chainIdentifier = Buffer.from(fromBase58(checkpointDigest).subarray(0, 4)).toString("hex");

  async function readObject(id: string, options: ObjectDataOptions): Promise<unknown> {
    const o = await source.getObject(id);
    if (!o) return { error: { code: "notExists", object_id: id } };
    return { data: objectJson(o, options) };
  }

  const methods: Record<string, (params: unknown[]) => Promise<unknown>> = {
    "rpc.discover": async () => ({ openrpc: "1.2.6", info: { title: "memrelay local chain", version: JSON_RPC_VERSION }, methods: Object.keys(methods) }),
    sui_getChainIdentifier: async () => chainIdentifier,
    sui_getCheckpoint: async ([id]) => {
      if (String(id) !== "0") throw new RpcError(-32602, "Invalid Params: only checkpoint 0 is served");
      return { epoch: "0", sequenceNumber: "0", digest: checkpointDigest, networkTotalTransactions: "0", timestampMs: "0", transactions: [], checkpointCommitments: [], validatorSignature: "" };
    },
    sui_getObject: async ([id, options]) => readObject(checkId(id), (options ?? {}) as ObjectDataOptions),
    sui_multiGetObjects: async ([ids, options]) => {
      if (!Array.isArray(ids)) throw new RpcError(-32602, "Invalid Params: ids must be an array");
      if (ids.length > 50) throw new RpcError(-32602, "Invalid Params: at most 50 ids");
      const norm = ids.map((i) => checkId(i));
      if (new Set(norm).size !== norm.length) throw new RpcError(-32602, "Invalid Params: duplicate object ids");
      return Promise.all(norm.map((i) => readObject(i, (options ?? {}) as ObjectDataOptions)));
    },
    suix_getDynamicFieldObject: async ([parentId, name]) => {
      const parent = checkId(parentId, "parent object id");
      const n = name as { type?: unknown; value?: unknown; bcs?: unknown } | undefined;
      if (!n || typeof n.type !== "string") throw new RpcError(-32602, "Invalid Params: name.type required");
      let bcsBytes: Uint8Array;
      // Name values: raw BCS (base64, field `bcs`), a u64 number/string (what the Seal SDK uses) or an address.
      if (typeof n.bcs === "string") bcsBytes = fromBase64(n.bcs);
      else if (n.type === "u64" && (typeof n.value === "string" || typeof n.value === "number")) {
        const b = Buffer.alloc(8);
        b.writeBigUInt64LE(BigInt(n.value));
        bcsBytes = new Uint8Array(b);
      } else if (n.type === "address" && typeof n.value === "string" && isValidSuiObjectId(normalizeSuiAddress(n.value))) {
        bcsBytes = new Uint8Array(Buffer.from(normalizeSuiAddress(n.value).slice(2), "hex"));
      } else throw new RpcError(-32602, "Invalid Params: unsupported dynamic field name; pass {type, bcs}");
      const o = await source.getDynamicField(parent, { type: n.type, bcs: bcsBytes } satisfies DynamicFieldName);
      if (!o) return { error: { code: "dynamicFieldNotFound", parent_object_id: parent } };
      return { data: objectJson(o, { showType: true, showOwner: true, showBcs: true, showPreviousTransaction: true, showContent: true }) };
    },
    sui_getNormalizedMoveFunction: async ([pkg, module, fn]) => {
      const id = checkId(pkg, "package id");
      if (typeof module !== "string" || typeof fn !== "string") throw new RpcError(-32602, "Invalid Params: module and function required");
      const o = await source.getObject(id);
      if (!o || o.type !== "package") throw new RpcError(-32602, `Invalid Params: package ${id} not found`);
      const f = o.functions?.[`${module}::${fn}`];
      if (!f) throw new RpcError(-32602, `Invalid Params: function ${module}::${fn} not found in package ${id}`);
      return f;
    },
    ...(opts.transactions ? transactionMethods(opts.transactions, readObject) : {}),
  };

  async function handleOne(req: unknown): Promise<unknown> {
    const r = req as { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown };
    const id = r && (typeof r.id === "number" || typeof r.id === "string") ? r.id : null;
    if (!r || typeof r !== "object" || r.jsonrpc !== "2.0" || typeof r.method !== "string") {
      return { jsonrpc: "2.0", id, error: { code: -32600, message: "Invalid Request" } };
    }
    const m = methods[r.method];
    if (!m) return { jsonrpc: "2.0", id, error: { code: -32601, message: `Method not found: ${r.method}` } };
    const params = Array.isArray(r.params) ? r.params : r.params === undefined ? [] : null;
    if (!params) return { jsonrpc: "2.0", id, error: { code: -32602, message: "Invalid Params: positional params expected" } };
    try {
      return { jsonrpc: "2.0", id, result: await m(params) };
    } catch (e) {
      if (e instanceof RpcError) return { jsonrpc: "2.0", id, error: { code: e.code, message: e.message } };
      return { jsonrpc: "2.0", id, error: { code: -32603, message: "Internal error" } };
    }
  }

  function send(res: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...CORS });
    res.end(text);
  }

  let url = "";
  const grpc = grpcWebRoute(ledgerGrpcMethods({ objects: source, transactions: opts.transactions, chainName: opts.chainName ?? "memrelay-local", chainIdentifier: checkpointDigest, selfJsonRpcUrl: () => url }), { maxBodyBytes: maxBody, cors: CORS });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (opts.routes && (await opts.routes(req, res))) return;
    if (await grpc(req, res)) return;
    if (req.method === "OPTIONS") {
      res.writeHead(204, { ...CORS, "access-control-max-age": "600" });
      return void res.end();
    }
    if (req.method === "GET" && (req.url === "/health" || req.url === "/")) return send(res, 200, { status: "ok" });
    if (req.method !== "POST") return send(res, 405, { jsonrpc: "2.0", id: null, error: { code: -32600, message: "POST only" } });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req) {
      size += (c as Buffer).length;
      if (size > maxBody) return send(res, 413, { jsonrpc: "2.0", id: null, error: { code: -32600, message: "request too large" } });
      chunks.push(c as Buffer);
    }
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      return send(res, 200, { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
    }
    if (Array.isArray(body)) {
      if (body.length === 0 || body.length > 50) return send(res, 200, { jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid batch" } });
      return send(res, 200, await Promise.all(body.map(handleOne)));
    }
    return send(res, 200, await handleOne(body));
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 500, { jsonrpc: "2.0", id: null, error: { code: -32603, message: "Internal error" } });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, opts.host ?? "127.0.0.1", () => resolve());
  });
  const addr = server.address() as AddressInfo;
  url = `http://${addr.address.includes(":") ? `[${addr.address}]` : addr.address}:${addr.port}`;
  return {
    url,
    grpcUrl: url,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
