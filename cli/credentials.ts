// The local credential file of the tool package (~/.memory/credentials.json, spec and REFERENCE.md field names,
// schema version 1): directory 0700, file 0600. The private key is a secret equal in power to an API key.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

export interface Credentials {
  readonly delegatePrivateKey: string;
  readonly delegatePublicKeyHex: string;
  readonly delegateAddress: string;
  readonly walletAddress: string;
  readonly accountId: string;
  readonly packageId: string;
  readonly relayerUrl: string;
  readonly label: string;
  readonly createdAt: string;
  readonly version: 1;
}

export const credentialsPath = (env: Record<string, string | undefined> = process.env) =>
  env.MEMORY_CREDENTIALS_FILE ?? join(env.HOME ?? homedir(), ".memory", "credentials.json");

export function readCredentials(path = credentialsPath()): Credentials | undefined {
  if (!existsSync(path)) return undefined;
  return JSON.parse(readFileSync(path, "utf8")) as Credentials;
}

export function writeCredentials(c: Credentials, path = credentialsPath()): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  chmodSync(dirname(path), 0o700);
  writeFileSync(path, JSON.stringify(c, null, 2) + "\n", { mode: 0o600 });
  chmodSync(path, 0o600);
}
