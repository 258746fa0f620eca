// Access policies for the local key servers. The identity's first 32 bytes name its owner; a policy answers whether
// a session's user address may obtain keys for that owner's identities.

import { normalizeSuiAddress } from "@mysten/sui/utils";
import type { IsAuthorized } from "./server.ts";

/**
 * What the ledger answers: the owner (or `{owner, ...}`) of the active account whose delegate_keys hold this Sui
 * address, or null when the address is no active delegate.
 */
export interface DelegateDirectory {
  ownerOfDelegateAddress(suiAddress: string): Promise<string | { readonly owner: string } | null>;
}

/**
 * The memrelay policy: the owner itself, or a delegate of the owner's active account. Bound to the owner: a
 * delegate of account A is refused B's identities, whatever the PTB says.
 */
export function ownerOrDelegate(directory: DelegateDirectory): IsAuthorized {
  return async (ownerAddress, userAddress) => {
    const owner = normalizeSuiAddress(ownerAddress);
    const user = normalizeSuiAddress(userAddress);
    if (user === owner) return true;
    const found = await directory.ownerOfDelegateAddress(user);
    if (found === null || found === undefined) return false;
    const of = typeof found === "string" ? found : found.owner;
    return typeof of === "string" && normalizeSuiAddress(of) === owner;
  };
}
