// Sign-in from the tool package (spec: memory_login): a new delegate key is made here, a loopback listener waits
// for the dashboard's callback, and the one-time connect URL (`?port&publicKey&state`) is valid 5 minutes. The
// dashboard's wallet adds the key to the account, then posts {state, accountId, walletAddress, packageId} to the
// listener; the state must match and the request must come from the dashboard's origin. The key is checked against
// the relayer (a signed request must be accepted) before the credential file is written.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { randomBytes, timingSafeEqual } from "node:crypto";
import { delegateKeypair } from "../../adapters/encryption/session.ts";
import { MemrelayClient, RelayerError } from "../../client/memrelay-client.ts";
import { writeCredentials, type Credentials } from "../../cli/credentials.ts";
import { readJson } from "../node-body.ts";

export const LOGIN_TTL_MS = 5 * 60_000;

export interface LoginRequest {
  readonly url: string;
  readonly expiresAt: number;
  /** Resolves with the saved credential once the dashboard calls back; rejects when the URL expires. */
  readonly completed: Promise<Credentials>;
  cancel(): void;
}

export interface LoginOptions {
  readonly webUrl: string;
  readonly relayerUrl: string;
  readonly label: string;
  readonly credentialsPath: string;
  readonly ttlMs?: number;
}

const HEX_ADDRESS = /^0x[0-9a-fA-F]{64}$/;
const CALLBACK_MAX_BYTES = 16 * 1024;

export async function startLogin(o: LoginOptions): Promise<LoginRequest> {
  const secret = new Uint8Array(randomBytes(32));
  const keypair = delegateKeypair(secret);
  const publicKeyHex = Buffer.from(keypair.getPublicKey().toRawBytes()).toString("hex");
  const state = randomBytes(32).toString("hex");
  const dashboard = new URL(o.webUrl).origin;
  let settle: { resolve: (c: Credentials) => void; reject: (e: Error) => void } | undefined;
  const completed = new Promise<Credentials>((resolve, reject) => (settle = { resolve, reject }));
  completed.catch(() => undefined); // a caller that never awaits an expired login is not an unhandled rejection

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json", "access-control-allow-origin": dashboard, vary: "origin" });
    res.end(JSON.stringify(body));
  };

  const accept = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.headers.origin !== dashboard) return send(res, 403, { error: `callbacks are accepted from ${dashboard} only` });
    let body: Record<string, unknown>;
    try {
      body = (await readJson(req, CALLBACK_MAX_BYTES)) as Record<string, unknown>;
    } catch {
      return send(res, 400, { error: "the body must be a JSON object" });
    }
    const given = Buffer.from(String(body.state ?? ""));
    if (given.length !== state.length || !timingSafeEqual(given, Buffer.from(state))) return send(res, 403, { error: "state does not match this login" });
    const { accountId, walletAddress, packageId } = body;
    if (![accountId, walletAddress, packageId].every((v) => typeof v === "string" && HEX_ADDRESS.test(v))) {
      return send(res, 400, { error: "accountId, walletAddress and packageId must be 0x followed by 64 hexadecimal characters" });
    }
    // The key must now be a delegate of the account: a signed request proves it before anything is saved.
    const client = new MemrelayClient({ baseUrl: o.relayerUrl, delegatePrivateKey: secret, accountId: String(accountId) });
    try {
      await client.call("POST", "/api/stats", {});
    } catch (err) {
      const why = err instanceof RelayerError ? `the relayer refused the new key (${err.status})` : "the relayer could not be reached";
      return send(res, 409, { error: `${why}: approve the key on the account, then try again` });
    }
    const creds: Credentials = {
      delegatePrivateKey: Buffer.from(secret).toString("hex"),
      delegatePublicKeyHex: publicKeyHex,
      delegateAddress: keypair.toSuiAddress(),
      walletAddress: String(walletAddress).toLowerCase(),
      accountId: String(accountId).toLowerCase(),
      packageId: String(packageId).toLowerCase(),
      relayerUrl: o.relayerUrl,
      label: o.label,
      createdAt: new Date().toISOString(),
      version: 1,
    };
    writeCredentials(creds, o.credentialsPath);
    send(res, 200, { ok: true, label: o.label });
    finish();
    settle?.resolve(creds);
  };

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://loopback").pathname;
    if (path !== "/callback") return send(res, 404, { error: "not found" });
    if (req.method === "OPTIONS") {
      res.writeHead(204, { "access-control-allow-origin": dashboard, "access-control-allow-methods": "POST", "access-control-allow-headers": "content-type", vary: "origin" });
      return void res.end();
    }
    if (req.method !== "POST") return send(res, 405, { error: "POST the approval here" });
    accept(req, res).catch(() => send(res, 500, { error: "the callback could not be processed" }));
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port));
  });
  const ttl = o.ttlMs ?? LOGIN_TTL_MS;
  const timer = setTimeout(() => {
    finish();
    settle?.reject(new Error("the login URL expired (5 minutes): ask for a new one"));
  }, ttl);
  timer.unref();
  function finish() {
    clearTimeout(timer);
    server.close();
    server.closeIdleConnections();
  }
  const url = new URL("/connect", o.webUrl);
  url.search = new URLSearchParams({ port: String(port), publicKey: publicKeyHex, state, label: o.label, relayer: o.relayerUrl }).toString();
  return {
    url: url.toString(),
    expiresAt: Date.now() + ttl,
    completed,
    cancel: () => {
      finish();
      settle?.reject(new Error("login cancelled"));
    },
  };
}
