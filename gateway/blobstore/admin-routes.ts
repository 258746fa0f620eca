// The blob store's admin routes (admin key): accounts, API keys and access keys (spec/blobstore.md).
import { HttpError, json } from "../http.ts";
import type { Result } from "../../eventlog/aggregate-store.ts";
import type { BlobstoreError } from "../../actors/blobstore/errors.ts";
import type { AppPrincipal } from "./auth.ts";
import { decodeCursor, encodeCursor } from "../../projections/blobstore/queries.ts";
import { LIMITS, isAccessKeyId, isUuid, optionalString, parseLimit } from "../../schemas/blobstore/validation.ts";
import { E400, E401, E404, MAX_ACCESS_KEYS, P, apiKeyJson, type BlobstoreRouteKit } from "./route-kit.ts";

export function registerAdminRoutes(kit: BlobstoreRouteKit): void {
  const { route, admin, jsonBody, query, commands, q } = kit;

  const ownedAccount = async (who: AppPrincipal, id: string) => {
    const a = isUuid(id) ? await q.account(id) : null;
    if (!a) throw new HttpError(404, `account ${id} not found`);
    if (a.app_id !== who.appId) throw new HttpError(403, "account does not belong to this app");
    return a;
  };
  const E403 = { description: "the account does not belong to this app" };
  /** A revoke answers 204 whether it revoked the key or found it revoked; a key that is not this account's is not found. */
  const revoked = (r: Result<unknown, BlobstoreError> | null) => r !== null && r.ok;

  route(
    { method: "post", path: "/accounts", summary: "Create an account and its first API key (shown once)", tag: "Admin", auth: "admin_key", body: { description: "optional name", schema: "AccountCreate", required: false }, responses: { 201: { description: "created", schema: "AccountCreated" }, 400: E400, 401: E401 } },
    "/accounts",
    admin(async (req, who) => {
      const name = optionalString(jsonBody(req, true), "name", LIMITS.accountName);
      const { account, key } = await commands.createAccount(who.appId, name);
      return json(201, { ...account, api_key: { id: key.state.key_id, account_id: account.account_id, prefix: key.state.prefix, secret: key.secret, created_at: key.state.created_at } }, { "cache-control": "no-store" });
    }),
  );

  route(
    { method: "get", path: "/accounts", summary: "List the app's accounts", tag: "Admin", auth: "admin_key", params: [P.limit, P.cursor], responses: { 200: { description: "page", schema: "AccountList" }, 400: E400, 401: E401 } },
    "/accounts",
    admin(async (req, who) => {
      const qs = query(req);
      const limit = parseLimit(qs.get("limit"));
      const rows = await q.accounts(who.appId, decodeCursor(qs.get("cursor")), limit + 1);
      const page = rows.slice(0, limit);
      return json(200, { data: page, next_cursor: rows.length > limit ? encodeCursor(page[page.length - 1].account_id) : null });
    }),
  );

  route(
    { method: "get", path: "/accounts/{account_id}", summary: "Read an account", tag: "Admin", auth: "admin_key", params: [P.account], responses: { 200: { description: "account", schema: "Account" }, 401: E401, 403: E403, 404: E404 } },
    "/accounts/:account_id",
    admin(async (req, who) => json(200, await ownedAccount(who, req.params[0]))),
  );

  route(
    { method: "post", path: "/accounts/{account_id}/api-keys", summary: "Issue a data API key (secret shown once)", tag: "Admin", auth: "admin_key", params: [P.account], responses: { 201: { description: "issued", schema: "ApiKeyWithSecret" }, 401: E401, 403: E403, 404: E404 } },
    "/accounts/:account_id/api-keys",
    admin(async (req, who) => {
      const a = await ownedAccount(who, req.params[0]);
      const label = req.body.length ? optionalString(jsonBody(req), "label", LIMITS.label) : null;
      const k = await commands.issueApiKey({ appId: who.appId, accountId: a.account_id, label });
      return json(201, { id: k.state.key_id, account_id: a.account_id, prefix: k.state.prefix, secret: k.secret, label: k.state.label, created_at: k.state.created_at }, { "cache-control": "no-store" });
    }),
  );

  route(
    { method: "get", path: "/accounts/{account_id}/api-keys", summary: "List an account's API keys (no secrets)", tag: "Admin", auth: "admin_key", params: [P.account], responses: { 200: { description: "keys", schema: { type: "array", items: { $ref: "#/components/schemas/ApiKey" } } }, 401: E401, 403: E403, 404: E404 } },
    "/accounts/:account_id/api-keys",
    admin(async (req, who) => {
      const a = await ownedAccount(who, req.params[0]);
      return json(200, (await q.listKeys({ accountId: a.account_id }, "api")).map(apiKeyJson));
    }),
  );

  route(
    { method: "delete", path: "/accounts/{account_id}/api-keys/{key_id}", summary: "Revoke an API key (effective on the next request)", tag: "Admin", auth: "admin_key", params: [P.account, { name: "key_id", in: "path", description: "API key id" }], responses: { 204: { description: "revoked" }, 401: E401, 403: E403, 404: E404 } },
    "/accounts/:account_id/api-keys/:key_id",
    admin(async (req, who) => {
      const a = await ownedAccount(who, req.params[0]);
      const keyId = req.params[1];
      const r = isUuid(keyId) ? await commands.revokeKey(keyId, { kind: "api", accountId: a.account_id }) : null;
      if (!revoked(r)) throw new HttpError(404, `API key ${keyId} not found`);
      return { status: 204 };
    }),
  );

  route(
    { method: "post", path: "/accounts/{account_id}/access-keys", summary: "Issue an S3-style access key (secret shown once; at most 3 active)", tag: "Admin", auth: "admin_key", params: [P.account], responses: { 201: { description: "issued", schema: "AccessKeyWithSecret" }, 401: E401, 403: E403, 404: E404, 409: { description: "limit reached" } } },
    "/accounts/:account_id/access-keys",
    admin(async (req, who) => {
      const a = await ownedAccount(who, req.params[0]);
      if ((await q.countActiveKeys(a.account_id, "access")) >= MAX_ACCESS_KEYS) throw new HttpError(409, `access key limit reached (${MAX_ACCESS_KEYS} active)`);
      const k = await commands.issueAccessKey({ appId: who.appId, accountId: a.account_id });
      return json(201, { access_key_id: k.accessKeyId, secret_access_key: k.secretAccessKey, created_at: k.state.created_at }, { "cache-control": "no-store" });
    }),
  );

  route(
    { method: "get", path: "/accounts/{account_id}/access-keys", summary: "List an account's access keys (no secrets)", tag: "Admin", auth: "admin_key", params: [P.account], responses: { 200: { description: "keys", schema: { type: "array", items: { $ref: "#/components/schemas/AccessKey" } } }, 401: E401, 403: E403, 404: E404 } },
    "/accounts/:account_id/access-keys",
    admin(async (req, who) => {
      const a = await ownedAccount(who, req.params[0]);
      const keys = await q.listKeys({ accountId: a.account_id }, "access");
      return json(200, keys.map((k) => ({ access_key_id: k.key_id, state: k.revoked_at ? "revoked" : "active", created_at: k.created_at, revoked_at: k.revoked_at })));
    }),
  );

  route(
    { method: "delete", path: "/accounts/{account_id}/access-keys/{access_key_id}", summary: "Revoke an access key", tag: "Admin", auth: "admin_key", params: [P.account, { name: "access_key_id", in: "path", description: "access key id" }], responses: { 204: { description: "revoked" }, 401: E401, 403: E403, 404: E404 } },
    "/accounts/:account_id/access-keys/:access_key_id",
    admin(async (req, who) => {
      const a = await ownedAccount(who, req.params[0]);
      const id = req.params[1];
      const r = isAccessKeyId(id) ? await commands.revokeKey(id, { kind: "access", accountId: a.account_id }) : null;
      if (!revoked(r)) throw new HttpError(404, `access key ${id} not found`);
      return { status: 204 };
    }),
  );

}
