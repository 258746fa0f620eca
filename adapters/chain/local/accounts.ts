// Account administration on the local ledger, with the signing keys of whoever acts (owner, operator, sponsor).
// Used by the CLI and tests. Every function signs a transaction and waits until its effects are readable.
import { PortError } from "../../ports.ts";
import { PORT } from "./errors.ts";
import { keypairFromSecret, type SecretKeyInput } from "../sui/keys.ts";
import type { LocalChain } from "./local-chain.ts";
import type { Account } from "./model.ts";

export { generateKeypair, keypairFromSecret, type SecretKeyInput } from "../sui/keys.ts";

interface Signed {
  /** Pays the gas instead of the signer (a sponsored transaction). */
  readonly sponsorKey?: SecretKeyInput;
}

function accountOf(result: { outcome: { account?: Account } }): Account {
  if (!result.outcome.account) throw new PortError(PORT, "unavailable", "transaction produced no account");
  return result.outcome.account;
}

function hexKey(publicKey: string | Uint8Array): string {
  return typeof publicKey === "string" ? publicKey.toLowerCase() : Buffer.from(publicKey).toString("hex");
}

/** The account id to act on: the given one, or the signer's own account. */
async function accountIdFor(chain: LocalChain, signer: SecretKeyInput, accountId?: string): Promise<string> {
  if (accountId) return accountId;
  const owner = keypairFromSecret(signer).address;
  const account = await chain.getAccountByOwner(owner);
  if (!account) throw new PortError(PORT, "not_found", `${owner} has no account`);
  return account.id;
}

/** Creates the account of the owner whose key signs (one per owner). */
export async function createAccount(chain: LocalChain, input: { ownerKey: SecretKeyInput } & Signed): Promise<Account> {
  return accountOf(await chain.signAndSubmit("create_account", input.ownerKey, {}, { gasOwner: input.sponsorKey }));
}

export async function addDelegateKey(
  chain: LocalChain,
  input: { ownerKey: SecretKeyInput; publicKey: string | Uint8Array; label?: string; accountId?: string } & Signed,
): Promise<Account> {
  const accountId = await accountIdFor(chain, input.ownerKey, input.accountId);
  return accountOf(
    await chain.signAndSubmit("add_delegate_key", input.ownerKey, { account_id: accountId, public_key: hexKey(input.publicKey), label: input.label ?? "" }, { gasOwner: input.sponsorKey }),
  );
}

export async function removeDelegateKey(
  chain: LocalChain,
  input: { ownerKey: SecretKeyInput; publicKey: string | Uint8Array; accountId?: string } & Signed,
): Promise<Account> {
  const accountId = await accountIdFor(chain, input.ownerKey, input.accountId);
  return accountOf(await chain.signAndSubmit("remove_delegate_key", input.ownerKey, { account_id: accountId, public_key: hexKey(input.publicKey) }, { gasOwner: input.sponsorKey }));
}

/** Deactivates an account; signed by its owner or by the operator (then `accountId` is required). */
export async function deactivate(chain: LocalChain, input: { signerKey: SecretKeyInput; accountId?: string } & Signed): Promise<Account> {
  const accountId = await accountIdFor(chain, input.signerKey, input.accountId);
  return accountOf(await chain.signAndSubmit("deactivate_account", input.signerKey, { account_id: accountId }, { gasOwner: input.sponsorKey }));
}

export async function reactivate(chain: LocalChain, input: { signerKey: SecretKeyInput; accountId?: string } & Signed): Promise<Account> {
  const accountId = await accountIdFor(chain, input.signerKey, input.accountId);
  return accountOf(await chain.signAndSubmit("reactivate_account", input.signerKey, { account_id: accountId }, { gasOwner: input.sponsorKey }));
}

/** Dev faucet, signed by the operator key: returns the recipient's new balance of `token`. */
export async function mint(chain: LocalChain, input: { operatorKey: SecretKeyInput; to: string; amount: bigint | string; token?: string }): Promise<bigint> {
  const result = await chain.signAndSubmit("mint", input.operatorKey, { to: input.to.toLowerCase(), token: input.token ?? "SUI", amount: String(input.amount) });
  return BigInt(result.outcome.balance?.amount ?? "0");
}

/** Moves `amount` of `token` from the signer to `to`; returns the sender's new balance of `token`. */
export async function transfer(
  chain: LocalChain,
  input: { fromKey: SecretKeyInput; to: string; amount: bigint | string; token?: string } & Signed,
): Promise<bigint> {
  const result = await chain.signAndSubmit("transfer", input.fromKey, { to: input.to.toLowerCase(), token: input.token ?? "SUI", amount: String(input.amount) }, { gasOwner: input.sponsorKey });
  return BigInt(result.outcome.balance?.amount ?? "0");
}
