// Text that may reach Postgres, a NATS subject or key, or the chain. Postgres `text` and `jsonb` refuse U+0000, and a
// lone UTF-16 surrogate has no UTF-8 form (it would be stored as U+FFFD, silently changing the value), so both are
// refused at the edge with a message that names the field — one bad input must never reach the pipeline.

const UNSAFE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why `s` cannot be stored as it is, or null. */
export function unsafeTextReason(s: string): string | null {
  const m = UNSAFE.exec(s);
  if (!m) return null;
  return m[0] === "\u0000" ? "contains U+0000" : "contains a lone surrogate (not valid Unicode)";
}

/** `s` with every character that cannot be stored replaced by U+FFFD (for records about bad input, never input). */
export function storableText(s: string): string {
  return s.replace(new RegExp(UNSAFE.source, "g"), "\ufffd");
}

/** The first string in a parsed JSON value (object keys included) that cannot be stored, with its path, or null. */
export function findUnsafeText(value: unknown, path = "body"): string | null {
  if (typeof value === "string") {
    const why = unsafeTextReason(value);
    return why ? `${path} ${why}` : null;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnsafeText(value[i], `${path}[${i}]`);
      if (found) return found;
    }
    return null;
  }
  if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      const why = unsafeTextReason(k);
      if (why) return `a field name in ${path} ${why}`;
      const found = findUnsafeText(v, path === "body" ? k : `${path}.${k}`);
      if (found) return found;
    }
  }
  return null;
}

/** The first query parameter (name or value) that cannot be stored, or null. */
export function findUnsafeQuery(params: URLSearchParams): string | null {
  for (const [k, v] of params) {
    const why = unsafeTextReason(k) ?? unsafeTextReason(v);
    if (why) return `query parameter ${JSON.stringify(k.replace(UNSAFE, "?"))} ${why}`;
  }
  return null;
}
