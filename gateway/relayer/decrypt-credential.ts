// The caller's decrypt credential (spec/relayer.md, Authentication): the exported encryption session in
// `x-encryption-session`, or under the name the MemWal SDKs send, `x-seal-session`; else the legacy raw delegate key
// in `x-delegate-key` (deprecated, see /version).
import type { DecryptCredential } from "../../adapters/ports.ts";
import { HttpError, type Request } from "../http.ts";

/** Request headers that carry a decrypt credential, for CORS. */
export const CREDENTIAL_HEADERS = ["x-encryption-session", "x-seal-session", "x-delegate-key"] as const;

export function decryptCredential(req: Request, why: string): DecryptCredential {
  const session = req.headers["x-encryption-session"] || req.headers["x-seal-session"];
  if (session) return { kind: "session", exported: session };
  const legacy = req.headers["x-delegate-key"];
  if (legacy) return { kind: "delegate-key", privateKeyHex: legacy };
  throw new HttpError(400, `${why}: send x-encryption-session (or x-seal-session, or the legacy x-delegate-key)`);
}
