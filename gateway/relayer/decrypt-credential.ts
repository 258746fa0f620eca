// The caller's decrypt credential (spec/relayer.md, Authentication): the exported encryption session in
// `x-encryption-session`, or under the name the MemWal SDKs send, `x-seal-session`; else the legacy raw delegate key
// in `x-delegate-key` (deprecated, see /version).
import { missingCredential, type DecryptCredential } from "../../schemas/encryption.ts";
import { HttpError, type Request } from "../http.ts";

/** Request headers that carry a decrypt credential, for CORS. */
export const CREDENTIAL_HEADERS = ["x-encryption-session", "x-seal-session", "x-delegate-key"] as const;

/** The credential the request offers, if any. */
export function offeredCredential(req: Request): DecryptCredential | undefined {
  const session = req.headers["x-encryption-session"] || req.headers["x-seal-session"];
  if (session) return { kind: "session", exported: session };
  const legacy = req.headers["x-delegate-key"];
  return legacy ? { kind: "delegate-key", privateKeyHex: legacy } : undefined;
}

export function decryptCredential(req: Request, why: string): DecryptCredential {
  const offered = offeredCredential(req);
  if (!offered) throw new HttpError(400, missingCredential(why));
  return offered;
}
