// What the console's directory and name claims can be refused for, and how each refusal reads in the console's
// contract (spec/console.md): the ConsoleHttpError of schemas/console/http.ts, which the gateway answers with and
// the `memrelay console` command prints, so both present a refusal the same way.
import { CODE, ConsoleHttpError, badRequest } from "../../schemas/console/http.ts";

export type ClaimScope = "bucket" | "file" | "email";

export type ConsoleError =
  /** another owner holds the name */
  | { readonly code: "name_taken"; readonly scope: ClaimScope; readonly name: string }
  | { readonly code: "space_not_found"; readonly spaceId: string }
  | { readonly code: "not_a_team_space"; readonly spaceId: string }
  | { readonly code: "plan_limit"; readonly limit: "users"; readonly tier: string; readonly allowed: number }
  | { readonly code: "last_owner"; readonly spaceId: string }
  | { readonly code: "unknown_tier"; readonly tier: string; readonly known: readonly string[] };

const TAKEN: Record<ClaimScope, (name: string) => string> = {
  bucket: (name) => `a bucket named ${JSON.stringify(name)} already exists in this space`,
  file: (name) => `a file named ${JSON.stringify(name)} already exists in this bucket`,
  email: (name) => `${name} has already signed up`,
};

export function contractError(e: ConsoleError): ConsoleHttpError {
  switch (e.code) {
    case "name_taken":
      return new ConsoleHttpError(409, TAKEN[e.scope](e.name), CODE.conflict);
    case "space_not_found":
      return new ConsoleHttpError(404, `space ${e.spaceId} not found`, CODE.notFound);
    case "not_a_team_space":
      return badRequest("members are added to team spaces only");
    case "plan_limit":
      return new ConsoleHttpError(422, `the ${e.tier} plan allows ${e.allowed} users per space`, CODE.planLimitExceeded, { limit: e.limit, currentTier: e.tier });
    case "last_owner":
      return badRequest("a space keeps at least one owner");
    case "unknown_tier":
      return badRequest(`unknown plan tier ${e.tier} (known: ${e.known.join(", ")})`);
  }
}

/** The result, or the refusal thrown as the console's contract error. */
export function orThrow<R>(r: { readonly ok: true; readonly result: R } | { readonly ok: false; readonly error: ConsoleError }): R {
  if (!r.ok) throw contractError(r.error);
  return r.result;
}
