// The error every service answers with `{error, ...extra}` and a status: part of the contract (DESIGN.md section 3:
// bad input gets a clear 4xx with a JSON error body), so validation in schemas/ and decisions in actors/ can raise it
// without depending on the HTTP layer.
export class HttpError extends Error {
  constructor(readonly status: number, message: string, readonly extra: Record<string, unknown> = {}, readonly headers: Record<string, string> = {}) {
    super(message);
  }
}
