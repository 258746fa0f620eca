// What a client hands over so the relayer may decrypt on its behalf (spec/relayer.md, Authentication:
// x-encryption-session / x-delegate-key). A secret: it may ride on the CMD work queue until acknowledged, never in an
// event, a snapshot, a log line or an error.
export type DecryptCredential =
  | { readonly kind: "session"; readonly exported: string }
  | { readonly kind: "delegate-key"; readonly privateKeyHex: string };

/** The error a route that must decrypt answers without a credential (400), naming the headers that carry one. */
export const missingCredential = (why: string) => `${why}: send x-encryption-session (or x-seal-session, or the legacy x-delegate-key)`;
