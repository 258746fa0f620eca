// What a client hands over so the relayer may decrypt on its behalf (spec/relayer.md, Authentication:
// x-encryption-session / x-delegate-key). A secret: it may ride on the CMD work queue until acknowledged, never in an
// event, a snapshot, a log line or an error.
export type DecryptCredential =
  | { readonly kind: "session"; readonly exported: string }
  | { readonly kind: "delegate-key"; readonly privateKeyHex: string };

/**
 * The error a route that must decrypt answers without a credential (400). Unlike MemWal, which then decrypts with its
 * own server key, the relayer decrypts only through the caller's credential (by design: README, Client
 * compatibility), so the message says how to send one: the header names and what goes in them.
 */
export const missingCredential = (why: string) =>
  `${why}: this relayer decrypts only through your own encryption session. Send a Seal SessionKey signed by your delegate key, exported as base64 of its export() JSON, in the x-encryption-session header (MemWal's SDKs send it as x-seal-session, also accepted); the legacy x-delegate-key header (the raw delegate private key, hex) works but is deprecated`;
