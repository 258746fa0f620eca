// How the chain port over a Sui node (adapters/chain/sui-rpc) types a node's answers, with the errors as the SDK raises
// them from what a Sui full node sends: JSON-RPC `{error: {code, message}}` (JsonRpcError) and gRPC statuses
// (RpcError). The messages are the node's own (sui-json-rpc error.rs and sui-rpc-api error.rs, QuorumDriverError).
import { describe, expect, it } from "vitest";
import { JsonRpcError } from "@mysten/sui/jsonRpc";
import { RpcError } from "@mysten/sui/grpc";
import { SignatureRejected } from "../adapters/ports.ts";
import { portError } from "../adapters/chain/sui-rpc/sui-rpc-chain.ts";

/** QuorumDriverError::InvalidUserSignature(SuiError::InvalidSignature{..}) as Sui's JSON-RPC and gRPC APIs word it. */
const badSignature = "Invalid user signature: Signature is not valid: Test inner invalid signature";
/** The same outer error for a signer whose signature is missing (SuiError::SignerSignatureAbsent). */
const signerAbsent = "Invalid user signature: Required Signature from 0x9b2f is absent [\"0x51c3\"]";

describe("the Sui node's refusals", () => {
  it("a user signature that does not verify is SignatureRejected, over JSON-RPC (-32002) and gRPC (INVALID_ARGUMENT)", () => {
    for (const err of [new JsonRpcError(badSignature, -32002), new RpcError(badSignature, "INVALID_ARGUMENT")]) {
      const e = portError(err);
      expect(e).toBeInstanceOf(SignatureRejected);
      expect([e.kind, e.message]).toEqual(["forbidden", `chain: ${badSignature}`]);
    }
  });

  it("any other refusal is rejected, an absent signer's signature included; a failure of the transport is unavailable", () => {
    const rejected = [
      new JsonRpcError(signerAbsent, -32002),
      new RpcError(signerAbsent, "INVALID_ARGUMENT"),
      new JsonRpcError("Transaction validator signing failed due to issues with transaction inputs, please review the errors and try again:\n- Balance of gas object 10 is lower than the needed amount: 100", -32002),
    ];
    for (const err of rejected) {
      const e = portError(err);
      expect(e).not.toBeInstanceOf(SignatureRejected);
      expect(e.kind).toBe("rejected");
    }
    // the wording alone is not a refusal: a status that is an outage stays one
    expect(portError(new RpcError(badSignature, "UNAVAILABLE")).kind).toBe("unavailable");
    expect(portError(new TypeError("fetch failed")).kind).toBe("unavailable");
  });
});
