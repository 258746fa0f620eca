// The boundary of a multipart/form-data body, shared by the console's file uploads and the blob store's quilt uploads;
// each gateway answers a missing one with its own error (the console's coded errors, the blob store's plain ones).

/** The boundary; "not multipart" or "no boundary" when the content type does not give one. */
export function multipartBoundary(contentType: string | undefined): string | { readonly missing: "not multipart" | "no boundary" } {
  const ct = contentType ?? "";
  if (!/^multipart\/form-data\s*;/i.test(ct)) return { missing: "not multipart" };
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(ct);
  if (!m) return { missing: "no boundary" };
  return m[1] ?? m[2];
}
