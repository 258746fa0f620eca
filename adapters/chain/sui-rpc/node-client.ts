// The SDK client for a Sui node, by the operator variables: CHAIN_GRPC_URL set ⇒ its gRPC API (SuiGrpcClient over
// gRPC-web, the SDK's documented transport), else CHAIN_RPC_URL ⇒ its JSON-RPC. Both expose the same core API, which
// the chain port and Seal's key-server reads use.
import type { ClientWithCoreApi } from "@mysten/sui/client";
import { SuiGrpcClient } from "@mysten/sui/grpc";
import { SuiJsonRpcClient } from "@mysten/sui/jsonRpc";
import type { ChainTransport } from "../../../schemas/chain.ts";

export interface SuiNodeUrls {
  /** CHAIN_GRPC_URL: takes precedence. */
  readonly grpcUrl?: string;
  /** CHAIN_RPC_URL */
  readonly rpcUrl?: string;
  readonly network: string;
}

/** Which transport the URLs select, or null when neither is given. */
export function transportOf(urls: Pick<SuiNodeUrls, "grpcUrl" | "rpcUrl">): ChainTransport | null {
  return urls.grpcUrl ? "grpc" : urls.rpcUrl ? "jsonrpc" : null;
}

export function suiNodeClient(urls: SuiNodeUrls): { readonly client: ClientWithCoreApi; readonly transport: ChainTransport } {
  // Binary gRPC-web frames (application/grpc-web+proto): a third smaller than the text format, served by Sui nodes alike.
  if (urls.grpcUrl) return { client: new SuiGrpcClient({ baseUrl: urls.grpcUrl, network: urls.network, format: "binary" }), transport: "grpc" };
  if (urls.rpcUrl) return { client: new SuiJsonRpcClient({ url: urls.rpcUrl, network: urls.network }), transport: "jsonrpc" };
  throw new Error("a Sui node URL is required: CHAIN_GRPC_URL or CHAIN_RPC_URL");
}
