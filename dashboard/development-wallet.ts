// The local network's development wallet: the dev account's owner key, held by `memrelay start`, which signs
// add/remove-delegate-key transactions on the local chain for the dashboard. A real network has none: there the
// user's own browser wallet signs.
import type { LocalChain } from "../adapters/chain/local/local-chain.ts";
import { addDelegateKey, removeDelegateKey } from "../adapters/chain/local/accounts.ts";
import type { MemoryAccount } from "../schemas/chain.ts";

export interface DevelopmentWallet {
  /** The account it manages, or null when this chain does not hold it. */
  account(): Promise<MemoryAccount | null>;
  approve(publicKeyHex: string, label: string): Promise<MemoryAccount>;
  revoke(publicKeyHex: string): Promise<MemoryAccount>;
}

export function localDevelopmentWallet(chain: LocalChain, ownerSecretKey: Uint8Array, accountId: string): DevelopmentWallet {
  return {
    account: () => chain.getAccount(accountId),
    approve: (publicKey, label) => addDelegateKey(chain, { ownerKey: ownerSecretKey, publicKey, label, accountId }),
    revoke: (publicKey) => removeDelegateKey(chain, { ownerKey: ownerSecretKey, publicKey, accountId }),
  };
}
