// Transaction kinds of the developer console on the local ledger: bucket policies and their access groups
// (spec/console.md, private buckets and sponsorship). Pure types and constants; the rules are in console-decide.ts.
//
// Objects are Move-style and shared, stored through the ledger's ObjectPut event so the JSON-RPC subset serves them;
// their shapes are the contract's (schemas/chain.ts).
import { CONSOLE_TX_KINDS, type ConsoleTxKind } from "../sui/call-kinds.ts";

/** Most members or admins one group holds. */
export const MAX_GROUP_MEMBERS = 1_000;

export function isConsoleTxKind(kind: string): kind is ConsoleTxKind {
  return (CONSOLE_TX_KINDS as readonly string[]).includes(kind);
}
