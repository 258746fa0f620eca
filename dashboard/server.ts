// The dashboard (`memrelay start`, port 5173, the --local preset's web URL): the connect page that memory_login
// opens (`/connect`; `/connect/mcp` for MemWal's package, whose memwal_login opens that path with more parameters),
// where the user approves a new delegate key, and the list of an account's delegate keys with revoke. A browser
// wallet speaking the Sui wallet standard approves for its own account, gas paid by the relayer's /sponsor; that is
// the only wallet on a real network (`memrelay start --network`), where accounts are read through the Sui node. On the
// local network the stack's development wallet (the dev account's owner key, held by this process) can approve and
// revoke too. The relayer refuses a removed key at once.
// The JSON API answers only same-origin requests carrying the page's token, so another site cannot drive the wallet.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import type { AccountDirectory } from "../adapters/ports.ts";
import type { MemoryAccount } from "../schemas/chain.ts";
import type { Logger } from "../config/logger.ts";
import { namingAddressVariable } from "../config/listen-error.ts";
import type { DevelopmentWallet } from "./development-wallet.ts";
import { connectPage, consentPage, keysPage, type PageView } from "./pages.ts";
import { MEMWAL_TOOL, TOOL } from "../schemas/mcp-tools.ts";
import { encodeTransactionKind } from "../adapters/chain/sui/transaction-kind.ts";
import { sponsorAuthMessage, transactionKindHash } from "../schemas/relayer/sponsor.ts";
import { BodyTooLarge, NotJson, readJson } from "../mcp/node-body.ts";

export interface DashboardOptions {
  /** Where browser wallets' accounts are read, and what their account calls name. */
  readonly chain: AccountDirectory;
  /** The local network's development wallet; absent on a real network. */
  readonly developmentWallet?: DevelopmentWallet;
  readonly packageId: string;
  readonly host: string;
  readonly port: number;
  readonly logger: Logger;
  /** The relayer whose /sponsor pays browser wallets' gas and whose OAuth consents the page answers (`/connect/claude`); never taken from the URL. */
  readonly relayerUrl?: string;
}

export interface Dashboard {
  readonly url: string;
  close(): Promise<void>;
}

const HEX_KEY = /^[0-9a-fA-F]{64}$/;
const LABEL_MAX = 64;

class Refused extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

async function jsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const v = await readJson(req, 16_384).catch((err) => {
    if (err instanceof BodyTooLarge) throw new Refused(413, "body too large");
    if (err instanceof NotJson) return undefined;
    throw err;
  });
  if (v && typeof v === "object" && !Array.isArray(v)) return v as Record<string, unknown>;
  throw new Refused(400, "the body must be a JSON object");
}

export async function startDashboard(o: DashboardOptions): Promise<Dashboard> {
  const token = randomBytes(24).toString("hex");
  /**
   * The page origins the API answers: the listener's, and on loopback its `localhost` spelling too (MemWal's --local
   * preset opens http://localhost:5173).
   */
  let origins = new Set<string>();
  const csp = `default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self' http://127.0.0.1:*${o.relayerUrl ? ` ${new URL(o.relayerUrl).origin}` : ""}`;
  const send = (res: ServerResponse, status: number, body: string, type = "application/json") => {
    res.writeHead(status, { "content-type": type, "cache-control": "no-store", "x-frame-options": "DENY", "content-security-policy": csp });
    res.end(body);
  };
  const keysOf = (a: MemoryAccount) => ({
    accountId: a.id,
    owner: a.owner,
    packageId: o.packageId,
    keys: a.delegate_keys.map((k) => ({ publicKey: k.public_key, address: k.sui_address, label: k.label, createdAt: new Date(k.created_at).toISOString() })),
  });
  const view: PageView = { developmentWallet: !!o.developmentWallet, walletChain: `sui:${o.chain.target.network}` };
  const devWallet = () => {
    if (!o.developmentWallet) throw new Refused(404, "this dashboard has no development wallet: use a Sui wallet in your browser");
    return o.developmentWallet;
  };

  const api = async (req: IncomingMessage, path: string): Promise<unknown> => {
    const given = Buffer.from(String(req.headers["x-dashboard-token"] ?? ""));
    if (req.headers.origin !== undefined && !origins.has(req.headers.origin)) throw new Refused(403, "cross-origin requests are refused");
    if (given.length !== token.length || !timingSafeEqual(given, Buffer.from(token))) throw new Refused(403, "missing or wrong dashboard token: reload the page");
    if (path === "/api/keys" && req.method === "GET") {
      const a = await devWallet().account();
      if (!a) throw new Refused(404, "the development account does not exist on this chain");
      return keysOf(a);
    }
    if (req.method !== "POST") throw new Refused(405, `${req.method} is not allowed on ${path}`);
    const body = await jsonBody(req);
    if (path.startsWith("/api/wallet/")) return walletStep(path, body);
    const publicKey = String(body.publicKey ?? "");
    if (!HEX_KEY.test(publicKey)) throw new Refused(400, "publicKey must be 64 hexadecimal characters (an Ed25519 public key)");
    if (path === "/api/approve") {
      const label = String(body.label ?? "").slice(0, LABEL_MAX);
      const a = await devWallet().approve(publicKey.toLowerCase(), label);
      o.logger.info("delegate key approved", { account: a.id, label });
      return { accountId: a.id, walletAddress: a.owner, packageId: o.packageId };
    }
    if (path === "/api/revoke") {
      const a = await devWallet().revoke(publicKey.toLowerCase());
      o.logger.info("delegate key revoked", { account: a.id });
      return { accountId: a.id, revoked: publicKey.toLowerCase() };
    }
    throw new Refused(404, `no route for ${path}`);
  };

  /**
   * A browser wallet (Sui wallet standard) managing its own account's keys, gas paid by the relayer's /sponsor: keys
   * lists them; prepare builds the add- or remove-delegate-key call and the sponsorship request the wallet signs as a
   * personal message; sponsor and execute forward the wallet's signatures to the relayer. The dashboard never holds
   * the wallet's key.
   */
  const walletStep = async (path: string, body: Record<string, unknown>): Promise<unknown> => {
    if (!o.relayerUrl) throw new Refused(503, "browser wallets need the relayer's /sponsor: this dashboard has no relayer");
    if (path === "/api/wallet/keys" || path === "/api/wallet/prepare") {
      const owner = String(body.owner ?? "").toLowerCase();
      if (!/^0x[0-9a-f]{64}$/.test(owner)) throw new Refused(400, "owner must be the wallet's Sui address");
      const a = await o.chain.getAccountByOwner(owner);
      if (!a) throw new Refused(404, `the wallet ${owner} has no memory account on this network`);
      if (path === "/api/wallet/keys") return keysOf(a);
      const publicKey = String(body.publicKey ?? "").toLowerCase();
      if (!HEX_KEY.test(publicKey)) throw new Refused(400, "publicKey must be 64 hexadecimal characters (an Ed25519 public key)");
      const kind =
        body.call === "remove"
          ? encodeTransactionKind("remove_delegate_key", { account_id: a.id, public_key: publicKey }, o.chain.target)
          : encodeTransactionKind("add_delegate_key", { account_id: a.id, public_key: publicKey, label: String(body.label ?? "").slice(0, LABEL_MAX) }, o.chain.target);
      const authTimestamp = Math.floor(Date.now() / 1000);
      const authNonce = randomUUID();
      return {
        accountId: a.id,
        packageId: o.packageId,
        transactionBlockKindBytes: Buffer.from(kind).toString("base64"),
        authTimestamp,
        authNonce,
        message: sponsorAuthMessage(owner, transactionKindHash(kind), authTimestamp, authNonce),
      };
    }
    const relayerPath = path === "/api/wallet/sponsor" ? "/sponsor" : path === "/api/wallet/execute" ? "/sponsor/execute" : null;
    if (!relayerPath) throw new Refused(404, `no route for ${path}`);
    const res = await fetch(new URL(relayerPath, o.relayerUrl), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), signal: AbortSignal.timeout(60_000) });
    const answer = (await res.json().catch(() => ({}))) as { error?: string };
    if (!res.ok) throw new Refused(res.status, answer.error ?? `the relayer answered ${res.status}`);
    return answer;
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://dashboard");
    if (url.pathname.startsWith("/api/")) {
      api(req, url.pathname).then(
        (v) => send(res, 200, JSON.stringify(v)),
        (err) => {
          if (!(err instanceof Refused)) o.logger.warn("dashboard request failed", { path: url.pathname, error: err instanceof Error ? err.message : String(err) });
          send(res, err instanceof Refused ? err.status : 502, JSON.stringify({ error: err instanceof Error ? err.message : String(err) }));
        },
      );
      return;
    }
    if (req.method !== "GET") return send(res, 405, JSON.stringify({ error: "pages are read with GET" }));
    if (url.pathname === "/connect") return send(res, 200, connectPage(token, view, TOOL.login), "text/html; charset=utf-8");
    if (url.pathname === "/connect/mcp") return send(res, 200, connectPage(token, view, MEMWAL_TOOL.login), "text/html; charset=utf-8");
    if (url.pathname === "/connect/claude" && o.relayerUrl) return send(res, 200, consentPage(token, view, o.relayerUrl), "text/html; charset=utf-8");
    if (url.pathname === "/" || url.pathname === "/keys") return send(res, 200, keysPage(token, view), "text/html; charset=utf-8");
    send(res, 404, JSON.stringify({ error: "not found" }));
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => resolve((server.address() as { port: number }).port));
  }).catch(namingAddressVariable("DASHBOARD_PORT"));
  const origin = `http://${o.host}:${port}`;
  origins = new Set([origin, ...(o.host === "127.0.0.1" ? [`http://localhost:${port}`] : [])]);
  o.logger.info("dashboard listening", { url: origin });
  return {
    url: origin,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
