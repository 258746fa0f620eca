// A Seal-compatible key server over node:http (the wire protocol @mysten/seal 1.x speaks):
//
//   GET  /v1/service?service_id=<object id>  → {service_id, pop}            proof of possession of the master key
//   POST /v1/fetch_key                       → {decryption_keys:[{id, encrypted_key:[c0, c1]}]}
//        body {ptb, enc_key, enc_verification_key, request_signature, certificate{user, session_vk, creation_time,
//        ttl_min, signature, mvr_name?}}
//
// fetch_key checks, in order (cheap before costly): shape → PTB (only `seal_approve*` calls of an allowed package,
// first argument a pure vector<u8> identity) → certificate time window → request signature by the session key →
// the user's personal-message signature on the certificate → the access policy → key derivation.
//
// Policy (replacing an on-chain dry run): the inner identity is `owner address (32 bytes) ‖ key-id bytes`, and
// `isAuthorized(owner, user)` must hold for every requested identity. The identity is bound to its owner, so a
// delegate of one account cannot obtain another owner's keys (MemWal's seal_approve let it).
//
// Errors use Seal's names so the SDK raises its typed errors: InvalidPTB, InvalidPackage/UnsupportedPackageId,
// InvalidCertificate (expired), InvalidSessionSignature, InvalidSignature, NoAccess, InvalidParameter,
// InvalidMVRName, InvalidServiceId, Failure.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ed25519 } from "@noble/curves/ed25519.js";
import { bcs } from "@mysten/sui/bcs";
import { fromBase64, isValidSuiAddress, normalizeSuiAddress, toBase64 } from "@mysten/sui/utils";
import { isValidPersonalMessageSignature } from "@mysten/sui/verify";
import { deriveUserSecretKey, elgamalEncrypt, masterPublicKey, parseElGamalPublicKey, proofOfPossession } from "./ibe.ts";

/** Decides whether `userAddress` (the session's signer) may obtain keys for identities owned by `ownerAddress`. */
export type IsAuthorized = (ownerAddress: string, userAddress: string) => Promise<boolean>;

export interface KeyServerOptions {
  /** The key server's on-chain object id (returned by /v1/service and bound into the proof of possession). */
  readonly objectId: string;
  /** 32-byte master secret key. */
  readonly masterKey: Uint8Array;
  /** Package ids (first versions) whose `seal_approve*` functions this server serves. */
  readonly packageIds: readonly string[];
  readonly isAuthorized: IsAuthorized;
  readonly host?: string;
  readonly port?: number;
  /** Largest accepted certificate TTL in minutes (Seal's limit is 30). */
  readonly maxTtlMin?: number;
  /** Tolerated clock skew for a certificate created "in the future". */
  readonly clockSkewMs?: number;
  /** Most identities per request. */
  readonly maxIds?: number;
  /** Value of the X-KeyServer-Version header (the SDK requires >= 0.4.1). */
  readonly serverVersion?: string;
  readonly now?: () => number;
}

export interface KeyServerStats {
  fetchKeyRequests: number;
  keysServed: number;
  refused: number;
}

export interface KeyServerHandle {
  readonly objectId: string;
  readonly url: string;
  readonly publicKey: Uint8Array;
  readonly server: Server;
  readonly stats: KeyServerStats;
  close(): Promise<void>;
}

class KsError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

const RequestFormat = bcs.struct("RequestFormat", {
  ptb: bcs.byteVector(),
  encKey: bcs.byteVector(),
  encVerificationKey: bcs.byteVector(),
});

const MAX_BODY = 256 * 1024;
/** Browser dapps call key servers directly, as they do Seal's. */
const CORS = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, POST, OPTIONS",
  "access-control-allow-headers": "content-type, request-id, client-sdk-type, client-sdk-version",
  "access-control-expose-headers": "x-keyserver-version",
} as const;

function b64(value: unknown, field: string, len?: number): Uint8Array {
  if (typeof value !== "string") throw new KsError(400, "InvalidParameter", `${field} must be base64`);
  let bytes: Uint8Array;
  try {
    bytes = fromBase64(value);
  } catch {
    throw new KsError(400, "InvalidParameter", `${field} must be base64`);
  }
  if (len !== undefined && bytes.length !== len) throw new KsError(400, "InvalidParameter", `${field} must be ${len} bytes`);
  return bytes;
}

interface ParsedPtb {
  packageId: string;
  /** Distinct inner identities, in request order. */
  ids: Uint8Array[];
}

/** Validates the seal_approve PTB (ProgrammableTransaction BCS, i.e. the transaction kind without its tag byte). */
function parsePtb(ptbBytes: Uint8Array, allowed: ReadonlySet<string>, maxIds: number): ParsedPtb {
  let ptb: ReturnType<typeof bcs.ProgrammableTransaction.parse>;
  try {
    ptb = bcs.ProgrammableTransaction.parse(ptbBytes);
  } catch {
    throw new KsError(403, "InvalidPTB", "not a programmable transaction");
  }
  if (ptb.commands.length === 0) throw new KsError(403, "InvalidPTB", "no commands");
  if (ptb.commands.length > maxIds) throw new KsError(403, "InvalidPTB", "too many commands");
  let packageId: string | undefined;
  const seen = new Set<string>();
  const ids: Uint8Array[] = [];
  for (const cmd of ptb.commands) {
    const call = cmd.MoveCall;
    if (!call) throw new KsError(403, "InvalidPTB", "only MoveCall commands are allowed");
    const pkg = normalizeSuiAddress(call.package);
    if (packageId === undefined) packageId = pkg;
    else if (pkg !== packageId) throw new KsError(403, "InvalidPTB", "all calls must target one package");
    if (!call.function.startsWith("seal_approve")) throw new KsError(403, "InvalidPTB", "only seal_approve* functions may be called");
    const first = call.arguments[0];
    if (!first || first.$kind !== "Input") throw new KsError(403, "InvalidPTB", "first argument must be the identity input");
    const input = ptb.inputs[first.Input];
    if (!input || input.$kind !== "Pure") throw new KsError(403, "InvalidPTB", "identity must be a pure vector<u8>");
    let id: Uint8Array;
    try {
      id = new Uint8Array(bcs.byteVector().parse(fromBase64(input.Pure.bytes)));
    } catch {
      throw new KsError(403, "InvalidPTB", "identity must be a pure vector<u8>");
    }
    if (id.length < 32) throw new KsError(403, "InvalidPTB", "identity must start with the owner address");
    const key = Buffer.from(id).toString("hex");
    if (!seen.has(key)) {
      seen.add(key);
      ids.push(id);
    }
  }
  if (!allowed.has(packageId!)) throw new KsError(403, "UnsupportedPackageId", "package not served by this key server");
  return { packageId: packageId!, ids };
}

/** The personal message the user signed for a session key (must match @mysten/seal's SessionKey exactly). */
export function sessionPersonalMessage(packageName: string, ttlMin: number, creationTimeMs: number, sessionVk: Uint8Array): Uint8Array {
  const utc = new Date(creationTimeMs).toISOString().slice(0, 19).replace("T", " ") + " UTC";
  return new TextEncoder().encode(
    `Accessing keys of package ${packageName} for ${ttlMin} mins from ${utc}, session key ${toBase64(sessionVk)}`,
  );
}

export async function startKeyServer(opts: KeyServerOptions): Promise<KeyServerHandle> {
  const objectId = normalizeSuiAddress(opts.objectId);
  const publicKey = masterPublicKey(opts.masterKey);
  const pop = toBase64(proofOfPossession(opts.masterKey, objectId));
  const allowed = new Set(opts.packageIds.map((p) => normalizeSuiAddress(p)));
  const maxTtlMin = opts.maxTtlMin ?? 30;
  const skew = opts.clockSkewMs ?? 30_000;
  const maxIds = opts.maxIds ?? 100;
  const version = opts.serverVersion ?? "0.5.0";
  const now = opts.now ?? Date.now;
  const stats: KeyServerStats = { fetchKeyRequests: 0, keysServed: 0, refused: 0 };

  function send(res: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
      "x-keyserver-version": version,
      ...CORS,
    });
    res.end(text);
  }

  async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req) {
      size += (c as Buffer).length;
      if (size > MAX_BODY) throw new KsError(413, "InvalidParameter", "request too large");
      chunks.push(c as Buffer);
    }
    try {
      const v = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error();
      return v as Record<string, unknown>;
    } catch {
      throw new KsError(400, "InvalidParameter", "body must be a JSON object");
    }
  }

  async function fetchKey(body: Record<string, unknown>): Promise<unknown> {
    const ptbBytes = b64(body.ptb, "ptb");
    const encKeyBytes = b64(body.enc_key, "enc_key", 48);
    const encVkBytes = b64(body.enc_verification_key, "enc_verification_key", 96);
    const requestSignature = b64(body.request_signature, "request_signature", 64);
    const cert = body.certificate as Record<string, unknown> | undefined;
    if (!cert || typeof cert !== "object") throw new KsError(400, "InvalidParameter", "certificate required");
    const { user, creation_time, ttl_min, signature, mvr_name } = cert;
    const sessionVk = b64(cert.session_vk, "certificate.session_vk", 32);
    if (typeof user !== "string" || !isValidSuiAddress(normalizeSuiAddress(user))) throw new KsError(400, "InvalidParameter", "certificate.user must be an address");
    if (typeof creation_time !== "number" || !Number.isSafeInteger(creation_time) || creation_time < 0) throw new KsError(400, "InvalidParameter", "certificate.creation_time");
    if (typeof ttl_min !== "number" || !Number.isInteger(ttl_min)) throw new KsError(400, "InvalidParameter", "certificate.ttl_min");
    if (typeof signature !== "string") throw new KsError(400, "InvalidParameter", "certificate.signature");
    if (mvr_name !== undefined && mvr_name !== null) throw new KsError(403, "InvalidMVRName", "MVR names are not served by local key servers");

    const { packageId, ids } = parsePtb(ptbBytes, allowed, maxIds);

    const t = now();
    if (ttl_min < 1 || ttl_min > maxTtlMin || creation_time > t + skew || t >= creation_time + ttl_min * 60_000) {
      throw new KsError(403, "InvalidCertificate", "certificate expired or not yet valid");
    }

    const signed = RequestFormat.serialize({ ptb: ptbBytes, encKey: encKeyBytes, encVerificationKey: encVkBytes }).toBytes();
    let sigOk = false;
    try {
      sigOk = ed25519.verify(requestSignature, signed, sessionVk);
    } catch {
      sigOk = false;
    }
    if (!sigOk) throw new KsError(403, "InvalidSessionSignature", "request signature does not verify under the session key");

    const userAddr = normalizeSuiAddress(user);
    const message = sessionPersonalMessage(packageId, ttl_min, creation_time, sessionVk);
    let certOk = false;
    try {
      certOk = await isValidPersonalMessageSignature(message, signature, { address: userAddr });
    } catch {
      certOk = false;
    }
    if (!certOk) throw new KsError(403, "InvalidSignature", "certificate signature does not verify for the user");

    let encPk: ReturnType<typeof parseElGamalPublicKey>;
    try {
      encPk = parseElGamalPublicKey(encKeyBytes);
    } catch {
      throw new KsError(400, "InvalidParameter", "enc_key is not a valid G1 point");
    }

    const owners = [...new Set(ids.map((id) => normalizeSuiAddress(Buffer.from(id.subarray(0, 32)).toString("hex"))))];
    let decisions: boolean[];
    try {
      decisions = await Promise.all(owners.map((o) => opts.isAuthorized(o, userAddr)));
    } catch {
      throw new KsError(503, "Failure", "access policy unavailable");
    }
    if (decisions.some((d) => !d)) throw new KsError(403, "NoAccess", "user does not have access to one or more of the requested keys");

    const pkgBytes = Buffer.from(packageId.slice(2), "hex");
    const decryption_keys = ids.map((id) => {
      const fullId = new Uint8Array(pkgBytes.length + id.length);
      fullId.set(pkgBytes, 0);
      fullId.set(id, pkgBytes.length);
      const usk = deriveUserSecretKey(opts.masterKey, fullId);
      const [c0, c1] = elgamalEncrypt(encPk, usk);
      return { id: Array.from(fullId), encrypted_key: [toBase64(c0), toBase64(c1)] };
    });
    stats.keysServed += decryption_keys.length;
    return { decryption_keys };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://local");
    if (req.method === "OPTIONS") {
      res.writeHead(204, { ...CORS, "access-control-max-age": "600" });
      return void res.end();
    }
    if (req.method === "GET" && url.pathname === "/v1/service") {
      const sid = url.searchParams.get("service_id");
      if (!sid || normalizeSuiAddress(sid) !== objectId) return send(res, 400, { error: "InvalidServiceId", message: "unknown service id" });
      return send(res, 200, { service_id: objectId, pop });
    }
    if (req.method === "POST" && url.pathname === "/v1/fetch_key") {
      stats.fetchKeyRequests++;
      try {
        return send(res, 200, await fetchKey(await readJson(req)));
      } catch (e) {
        stats.refused++;
        if (e instanceof KsError) return send(res, e.status, { error: e.code, message: e.message });
        return send(res, 503, { error: "Failure", message: "internal error" });
      }
    }
    if (req.method === "GET" && (url.pathname === "/health" || url.pathname === "/")) return send(res, 200, { status: "ok", service_id: objectId });
    return send(res, 404, { error: "NotFound", message: "no such route" });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) send(res, 503, { error: "Failure", message: "internal error" });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, opts.host ?? "127.0.0.1", () => resolve());
  });
  const addr = server.address() as AddressInfo;
  return {
    objectId,
    url: `http://${addr.address.includes(":") ? `[${addr.address}]` : addr.address}:${addr.port}`,
    publicKey,
    server,
    stats,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
