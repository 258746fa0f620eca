// The body of a Walrus publisher's `PUT /v1/quilts`: multipart/form-data where every part is a patch named by its
// field name (its identifier), and the reserved field `_metadata` is a JSON list of {identifier, tags}. The body is
// already bounded by the route's limit, so it is parsed whole; the console's streaming parser takes one file only.
import { HttpError } from "../http.ts";
import { multipartBoundary } from "../multipart-boundary.ts";
import type { QuiltInput } from "../../adapters/blobs/quilt-codec.ts";

const METADATA_FIELD = "_metadata";

function quiltBoundary(contentType: string | undefined): string {
  const b = multipartBoundary(contentType);
  if (typeof b === "string") return b;
  throw new HttpError(400, b.missing === "not multipart" ? "a quilt is sent as multipart/form-data, one part per patch" : "multipart/form-data without a boundary");
}

interface Part {
  readonly name: string;
  readonly data: Buffer;
}

function partsOf(body: Buffer, boundary: string): Part[] {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: Part[] = [];
  let at = body.indexOf(delimiter);
  if (at < 0) throw new HttpError(400, "multipart body without its boundary");
  for (;;) {
    at += delimiter.length;
    if (body.subarray(at, at + 2).toString() === "--") return parts;
    if (body.subarray(at, at + 2).toString() !== "\r\n") throw new HttpError(400, "malformed multipart delimiter");
    const headerEnd = body.indexOf("\r\n\r\n", at + 2);
    if (headerEnd < 0) throw new HttpError(400, "multipart part without the end of its headers");
    const headers = body.subarray(at + 2, headerEnd).toString("utf8");
    const next = body.indexOf(Buffer.from(`\r\n--${boundary}`), headerEnd + 4);
    if (next < 0) throw new HttpError(400, "multipart body without its closing boundary");
    const disposition = /^content-disposition:\s*form-data(.*)$/im.exec(headers)?.[1] ?? "";
    const name = /;\s*name="((?:[^"\\]|\\.)*)"/i.exec(disposition)?.[1] ?? /;\s*name=([^;\s]+)/i.exec(disposition)?.[1];
    if (name === undefined) throw new HttpError(400, "a multipart part without a field name (the patch's identifier)");
    parts.push({ name: name.replace(/\\(.)/g, "$1"), data: body.subarray(headerEnd + 4, next) });
    at = next + 2;
  }
}

function metadataOf(text: string): Map<string, Record<string, string>> {
  let list: unknown;
  try {
    list = JSON.parse(text);
  } catch {
    throw new HttpError(400, "_metadata is not JSON");
  }
  if (!Array.isArray(list)) throw new HttpError(400, "_metadata must be a list of {identifier, tags}");
  const tags = new Map<string, Record<string, string>>();
  for (const item of list as unknown[]) {
    const o = item as { identifier?: unknown; tags?: unknown };
    if (typeof o?.identifier !== "string") throw new HttpError(400, "every _metadata entry needs an identifier");
    const t = o.tags ?? {};
    if (typeof t !== "object" || t === null || Object.values(t).some((v) => typeof v !== "string")) throw new HttpError(400, `tags of ${o.identifier} must map strings to strings`);
    tags.set(o.identifier, t as Record<string, string>);
  }
  return tags;
}

/** The patches of a quilt upload; 400 for an empty quilt, a duplicate or reserved identifier, unknown metadata. */
export function parseQuiltForm(body: Buffer, contentType: string | undefined): QuiltInput[] {
  const parts = partsOf(body, quiltBoundary(contentType));
  const metaParts = parts.filter((p) => p.name === METADATA_FIELD);
  if (metaParts.length > 1) throw new HttpError(400, "_metadata given more than once");
  const tags = metaParts.length ? metadataOf(metaParts[0].data.toString("utf8")) : new Map<string, Record<string, string>>();
  const seen = new Set<string>();
  const patches: QuiltInput[] = [];
  for (const p of parts) {
    if (p.name === METADATA_FIELD) continue;
    if (p.name === "") throw new HttpError(400, "a patch identifier must not be empty");
    if (p.name.startsWith("_")) throw new HttpError(400, `patch identifier ${JSON.stringify(p.name)} starts with _ (reserved)`);
    if (seen.has(p.name)) throw new HttpError(400, `duplicate patch identifier ${JSON.stringify(p.name)}`);
    seen.add(p.name);
    patches.push({ identifier: p.name, contents: p.data, tags: tags.get(p.name) });
  }
  for (const id of tags.keys()) if (!seen.has(id)) throw new HttpError(400, `_metadata names ${JSON.stringify(id)}, which is not a patch of this quilt`);
  if (patches.length === 0) throw new HttpError(400, "a quilt needs at least one patch");
  return patches;
}
