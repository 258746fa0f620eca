// OpenAPI 3 document of the blob store, built from the same route table the listener registers, so every route is
// documented by construction.

export type Auth = "public" | "api_key" | "admin_key";

export interface ParamDoc {
  readonly name: string;
  readonly in: "path" | "query" | "header";
  readonly description: string;
  readonly required?: boolean;
  readonly schema?: Record<string, unknown>;
}

export interface ResponseDoc {
  readonly description: string;
  /** component schema name, or an inline schema; binary bodies use `binary` */
  readonly schema?: string | Record<string, unknown>;
  readonly binary?: boolean;
}

export interface RouteDoc {
  readonly method: "get" | "post" | "put" | "patch" | "delete";
  /** OpenAPI form: /api/v1/buckets/{bucket_name} */
  readonly path: string;
  readonly summary: string;
  readonly tag: string;
  readonly auth: Auth;
  readonly params?: readonly ParamDoc[];
  readonly body?: { readonly description: string; readonly schema?: string | Record<string, unknown>; readonly binary?: boolean; readonly required?: boolean };
  readonly responses: Readonly<Record<number, ResponseDoc>>;
}

const ref = (s: string | Record<string, unknown>) => (typeof s === "string" ? { $ref: `#/components/schemas/${s}` } : s);
const str = { type: "string" };
const int = { type: "integer" };
const ts = { type: "string", format: "date-time" };
const nullable = (s: Record<string, unknown>) => ({ ...s, nullable: true });

export const SCHEMAS: Record<string, Record<string, unknown>> = {
  Error: { type: "object", required: ["error"], properties: { error: str } },
  Bucket: {
    type: "object",
    properties: {
      name: str,
      bucket_id: str,
      account_id: str,
      description: str,
      metadata: { type: "object", additionalProperties: str },
      created_at: ts,
      updated_at: ts,
      blob_count: int,
      total_bytes: int,
    },
  },
  BucketCreate: {
    type: "object",
    required: ["name"],
    properties: {
      name: { type: "string", pattern: "^[a-z0-9](?:[a-z0-9]|-(?!-))*[a-z0-9]$", minLength: 3, maxLength: 63 },
      description: { type: "string", maxLength: 1024 },
      metadata: { type: "object", additionalProperties: str },
    },
  },
  BucketUpdate: { type: "object", properties: { description: { type: "string", maxLength: 1024 }, metadata: { type: "object", additionalProperties: str } } },
  BucketList: { type: "object", properties: { data: { type: "array", items: ref("Bucket") }, next_cursor: nullable(str) } },
  Blob: {
    type: "object",
    properties: {
      key: str,
      blob_id: { type: "string", description: "SHA-256 of the bytes, 32 bytes as URL-safe base64 without padding" },
      bucket_name: str,
      account_id: str,
      content_type: str,
      size: int,
      md5: { type: "string", description: "hex MD5 of the bytes (the ETag, quoted)" },
      etag: str,
      created_at: ts,
      updated_at: ts,
    },
  },
  BlobList: { type: "object", properties: { data: { type: "array", items: ref("Blob") }, next_cursor: nullable(str) } },
  Account: { type: "object", properties: { account_id: str, app_id: str, name: nullable(str), created_at: ts } },
  AccountList: { type: "object", properties: { data: { type: "array", items: ref("Account") }, next_cursor: nullable(str) } },
  AccountCreate: { type: "object", properties: { name: { type: "string", maxLength: 128 } } },
  AccountCreated: {
    type: "object",
    properties: { account_id: str, app_id: str, name: nullable(str), created_at: ts, api_key: ref("ApiKeyWithSecret") },
  },
  ApiKeyWithSecret: {
    type: "object",
    properties: { id: str, account_id: str, prefix: str, secret: { type: "string", description: "64 hex characters, shown once" }, created_at: ts },
  },
  ApiKey: {
    type: "object",
    properties: { id: str, account_id: str, prefix: str, state: { type: "string", enum: ["active", "revoked"] }, created_at: ts, revoked_at: nullable(ts), last_used_at: nullable(ts) },
  },
  AccessKeyWithSecret: { type: "object", properties: { access_key_id: str, secret_access_key: { type: "string", description: "shown once" }, created_at: ts } },
  AccessKey: { type: "object", properties: { access_key_id: str, state: { type: "string", enum: ["active", "revoked"] }, created_at: ts, revoked_at: nullable(ts) } },
  Wallet: { type: "object", properties: { provisioned: { type: "boolean" }, wallet: { type: "object", properties: { address: str } } } },
  WalrusStored: {
    type: "object",
    description: "Walrus publisher response: exactly one of newlyCreated or alreadyCertified",
    properties: {
      newlyCreated: {
        type: "object",
        properties: {
          blobObject: {
            type: "object",
            properties: {
              id: str,
              registeredEpoch: int,
              blobId: str,
              size: int,
              encodingType: str,
              certifiedEpoch: int,
              storage: { type: "object", properties: { id: str, startEpoch: int, endEpoch: int, storageSize: int } },
              deletable: { type: "boolean" },
            },
          },
          resourceOperation: { type: "object" },
          cost: int,
        },
      },
      alreadyCertified: { type: "object", properties: { blobId: str, object: str, endEpoch: int } },
    },
  },
};

export function buildOpenApi(routes: readonly RouteDoc[], info: { version: string; serverUrl?: string }): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const op: Record<string, unknown> = {
      summary: r.summary,
      tags: [r.tag],
      operationId: `${r.method}_${r.path.replace(/[^A-Za-z0-9]+/g, "_").replace(/^_|_$/g, "")}`,
      security: r.auth === "public" ? [] : [{ [r.auth === "api_key" ? "apiKey" : "adminKey"]: [] }],
      parameters: (r.params ?? []).map((p) => ({ name: p.name, in: p.in, description: p.description, required: p.in === "path" ? true : p.required ?? false, schema: p.schema ?? str })),
      responses: Object.fromEntries(
        Object.entries(r.responses).map(([status, d]) => [
          status,
          {
            description: d.description,
            ...(d.binary
              ? { content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } }
              : d.schema
                ? { content: { [d.schema === "Metrics" ? "text/plain" : "application/json"]: { schema: d.schema === "Metrics" ? str : ref(d.schema) } } }
                : Number(status) >= 400
                  ? { content: { "application/json": { schema: ref("Error") } } }
                  : {}),
          },
        ]),
      ),
    };
    if (r.body) {
      op.requestBody = {
        description: r.body.description,
        required: r.body.required ?? true,
        content: r.body.binary
          ? { "application/octet-stream": { schema: { type: "string", format: "binary" } } }
          : { "application/json": { schema: ref(r.body.schema ?? { type: "object" }) } },
      };
    }
    (paths[r.path] ??= {})[r.method] = op;
  }
  return {
    openapi: "3.0.3",
    info: {
      title: "memrelay blob storage service",
      version: info.version,
      description:
        "Apps administer accounts (admin keys), accounts own buckets and blobs (API keys), blobs are read publicly by bucket and key or by blob id. " +
        "Also a Walrus-compatible publisher and aggregator (PUT /v1/blobs, GET /v1/blobs/{blob_id}). Errors are JSON {error}.",
    },
    ...(info.serverUrl ? { servers: [{ url: info.serverUrl }] } : {}),
    tags: [
      { name: "Admin", description: "Accounts and their keys, with an app's admin key" },
      { name: "Buckets", description: "An account's buckets, with its API key" },
      { name: "Blobs", description: "Blob writes (API key) and public reads" },
      { name: "Wallet", description: "The account's wallet" },
      { name: "Walrus", description: "Walrus publisher/aggregator HTTP API" },
      { name: "Infrastructure", description: "Probes, metrics and this document" },
    ],
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", bearerFormat: "64 hex characters (data API key)" },
        adminKey: { type: "http", scheme: "bearer", bearerFormat: "64 hex characters (app admin key)" },
      },
      schemas: SCHEMAS,
    },
  };
}
