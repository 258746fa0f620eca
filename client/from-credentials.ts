// A relayer client for the credential file (~/.memory/credentials.json, written by `memrelay start` or the tool
// package's login): what `memrelay remember|recall|status` and the README's tour use, so a script needs one line.
import { dataDirOf } from "../config/env.ts";
import { readStackFile } from "../cli/stack-file.ts";
import { credentialsPath, readCredentials } from "../cli/credentials.ts";
import { MemrelayClient } from "./memrelay-client.ts";
import { cachedSessionProvider } from "./session-cache.ts";

export class NoCredentialsError extends Error {
  constructor(readonly path: string) {
    super(`no credentials at ${path}: run \`memrelay start\` once (it creates a dev account), or log in with the tool package`);
  }
}

/**
 * The client of the credential file's delegate key. Relayer: `relayer`, else MEMORY_SERVER_URL, else the running
 * `memrelay start` of the data directory (its port may differ from the one the credential was made on), else the
 * credential's relayerUrl. Recall's decrypt session is made from the same key on first use.
 */
export function clientFromCredentials(opts: { relayer?: string; env?: Record<string, string | undefined> } = {}): MemrelayClient {
  const env = opts.env ?? process.env;
  const path = credentialsPath(env);
  const creds = readCredentials(path);
  if (!creds) throw new NoCredentialsError(path);
  const baseUrl = opts.relayer ?? env.MEMORY_SERVER_URL ?? readStackFile(dataDirOf(env))?.relayer_url ?? creds.relayerUrl;
  const key = Uint8Array.from(Buffer.from(creds.delegatePrivateKey.replace(/^0x/, ""), "hex"));
  let provider: (() => Promise<string>) | undefined;
  const session = async () => {
    if (!provider) {
      const cfg = (await (await fetch(`${baseUrl}/config`)).json()) as { packageId: string; chainRpcUrl: string };
      provider = cachedSessionProvider({ delegateSecretKey: key, packageId: cfg.packageId, rpcUrl: cfg.chainRpcUrl });
    }
    return provider();
  };
  return new MemrelayClient({ baseUrl, delegatePrivateKey: key, accountId: creds.accountId, encryptionSession: session });
}
