// The local ledger's gRPC-web endpoint as the protocol has it (adapters/chain/local/rpc/grpc-web.ts): POST
// /sui.rpc.v2.<Service>/<Method>, 5-byte framed messages in binary (application/grpc-web+proto) or base64
// (application/grpc-web-text), the answer's data frame then a trailer frame with grpc-status; failures as trailers-only
// answers. Requests are encoded with the SDK's own message types, frames by hand (they are what is under test).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GrpcTypes, RpcError, SuiGrpcClient } from "@mysten/sui/grpc";
import { SuiJsonRpcClient } from "@mysten/sui/jsonRpc";
import { startChainRpcServer, type ChainRpcServerHandle } from "../adapters/chain/local/rpc/server.ts";
import { MemoryObjectSource } from "../adapters/chain/local/rpc/objects.ts";

let node: ChainRpcServerHandle;
beforeAll(async () => {
  node = await startChainRpcServer({ objects: new MemoryObjectSource(), chainName: "memnet" });
});
afterAll(async () => node?.close());

function frame(kind: number, payload: Uint8Array): Buffer {
  const header = Buffer.alloc(5);
  header[0] = kind;
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

/** The frames of a grpc-web answer body: [kind, payload][]. */
function framesOf(body: Buffer): [number, Buffer][] {
  const out: [number, Buffer][] = [];
  for (let at = 0; at < body.length; ) {
    const length = body.readUInt32BE(at + 1);
    out.push([body[at]!, body.subarray(at + 5, at + 5 + length)]);
    at += 5 + length;
  }
  return out;
}

const post = (path: string, contentType: string, body: Uint8Array | string) => fetch(`${node.grpcUrl}${path}`, { method: "POST", headers: { "content-type": contentType, "x-grpc-web": "1" }, body });

describe("the ledger's gRPC-web endpoint", () => {
  it("answers a unary call with a data frame and a trailer frame, in binary and in base64 text", async () => {
    const request = frame(0, GrpcTypes.GetServiceInfoRequest.toBinary({}));
    const genesis = (await new SuiJsonRpcClient({ url: node.url, network: "memnet" }).getCheckpoint({ id: "0" })).digest;

    const binary = await post("/sui.rpc.v2.LedgerService/GetServiceInfo", "application/grpc-web+proto", request);
    expect(binary.status).toBe(200);
    expect(binary.headers.get("content-type")).toBe("application/grpc-web+proto");
    const [[dataKind, data], [trailerKind, trailer]] = framesOf(Buffer.from(await binary.arrayBuffer())) as [[number, Buffer], [number, Buffer]];
    expect(dataKind).toBe(0x00);
    expect(GrpcTypes.GetServiceInfoResponse.fromBinary(data)).toMatchObject({ chainId: genesis, chain: "memnet" });
    expect(trailerKind).toBe(0x80);
    expect(trailer.toString("ascii")).toContain("grpc-status:0\r\n");

    const text = await post("/sui.rpc.v2.LedgerService/GetServiceInfo", "application/grpc-web-text", request.toString("base64"));
    expect(text.headers.get("content-type")).toBe("application/grpc-web-text+proto");
    const [[, textData]] = framesOf(Buffer.from(await text.text(), "base64")) as [[number, Buffer]];
    expect(GrpcTypes.GetServiceInfoResponse.fromBinary(textData).chainId).toBe(genesis);
  });

  it("answers UNIMPLEMENTED for a method it does not serve, and INVALID_ARGUMENT for a malformed body", async () => {
    const unknown = await post("/sui.rpc.v2.StateService/ListDynamicFields", "application/grpc-web+proto", frame(0, new Uint8Array()));
    expect(unknown.headers.get("grpc-status")).toBe("12");
    expect(decodeURIComponent(unknown.headers.get("grpc-message")!)).toBe("method sui.rpc.v2.StateService/ListDynamicFields is not implemented by this ledger");
    // the SDK sees the same: a typed UNIMPLEMENTED error naming the method
    const sdk = new SuiGrpcClient({ baseUrl: node.grpcUrl, network: "memnet" });
    const refused = await sdk.core.listDynamicFields({ parentId: "0x2" }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RpcError);
    expect(refused).toMatchObject({ code: "UNIMPLEMENTED", message: expect.stringContaining("ListDynamicFields is not implemented") });
    // a function of a package the ledger does not have is NOT_FOUND
    await expect(sdk.core.getMoveFunction({ packageId: "0x2", moduleName: "coin", name: "value" })).rejects.toMatchObject({ code: "NOT_FOUND" });

    const truncated = await post("/sui.rpc.v2.LedgerService/GetServiceInfo", "application/grpc-web+proto", Buffer.from([0, 0, 0, 0, 9, 1]));
    expect(truncated.headers.get("grpc-status")).toBe("3");
    // JSON-RPC on the same listener is unaffected
    expect((await new SuiJsonRpcClient({ url: node.url, network: "memnet" }).getChainIdentifier()).length).toBeGreaterThan(0);
  });

  it("answers a missing object per item as NOT_FOUND, which the SDK reports as an object that does not exist", async () => {
    const sdk = new SuiGrpcClient({ baseUrl: node.grpcUrl, network: "memnet" });
    const { objects } = await sdk.core.getObjects({ objectIds: ["0x" + "cd".repeat(32)] });
    expect(objects[0]).toMatchObject({ reason: "notFound" });
  });
});
