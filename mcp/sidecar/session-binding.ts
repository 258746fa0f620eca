// Who may use an open agent session. The session id (random, handed only to the client that opened the session) is
// the capability, bound to the credential and the source address that opened it:
// - legacy SSE: the MCP SSE transport posts its messages to the endpoint its stream announced, and MemWal's package
//   (`@mysten-incubation/memwal-mcp`) sends those POSTs with no credential at all; such a POST is accepted from the
//   address that opened the stream;
// - Streamable HTTP: MCP's authorization rules put the credential on every request, so a request without one is
//   refused (every client we know sends it: the MCP SDK's, ours, MemWal's documented set-up);
// - a request carrying a different credential than the one that opened the session is refused on either transport.
// Pure: headers and addresses in, a verdict out.
import { hash, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

export interface SessionBinding {
  /** Digest of the opening request's credential (bearer and account id). */
  readonly credential: Buffer;
  /** The client's address as the relayer saw it. */
  readonly source: string;
}

export type BindingVerdict = { readonly ok: true } | { readonly ok: false; readonly status: 401 | 403; readonly message: string };

const digestOf = (headers: IncomingHttpHeaders) => {
  const account = String(headers["x-memory-account-id"] ?? headers["x-memwal-account-id"] ?? "").toLowerCase();
  return hash("sha256", `${headers.authorization ?? ""}\n${account}`, "buffer");
};

/** The digest of a request's credential, or undefined when it carries none (no Authorization header). */
const credentialDigest = (headers: IncomingHttpHeaders): Buffer | undefined => (headers.authorization ? digestOf(headers) : undefined);

/** What an opening request (its credential already accepted) binds its session to. */
export const bindingOf = (headers: IncomingHttpHeaders, source: string): SessionBinding => ({ credential: digestOf(headers), source });

const OK: BindingVerdict = { ok: true };

/** May this request use the session bound to `binding`? */
export function checkBinding(binding: SessionBinding, kind: "sse" | "streamable", headers: IncomingHttpHeaders, source: string): BindingVerdict {
  const given = credentialDigest(headers);
  if (given) {
    return timingSafeEqual(given, binding.credential)
      ? OK
      : { ok: false, status: 403, message: "this session was opened with another credential: send the credential that opened it, or open a session of your own" };
  }
  if (kind === "streamable") {
    return { ok: false, status: 401, message: "missing credential: every request of a Streamable HTTP session carries the Authorization header and account id that opened it" };
  }
  return source === binding.source
    ? OK
    : { ok: false, status: 403, message: "this session was opened from another address: a message without a credential is accepted only from the address that opened the stream" };
}
