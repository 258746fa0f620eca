// Generators of bad requests for the edge fuzz test (test/edge-fuzz.test.ts): every case is invalid by construction
// (broken or non-object JSON, a field of the wrong type, text that cannot be stored, an oversized value, a mangled
// path, query or credential), so every answer must be a 4xx. A seeded PRNG makes a failure reproducible.

/** mulberry32: small, fast, good enough to pick cases. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Rand = () => number;
export const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

export type FieldKind = "str" | "optstr" | "num" | "arr" | "obj";

/** A route the fuzzer aims at, with a valid request it then breaks. */
export interface Target {
  readonly service: string;
  readonly method: string;
  /** Concrete path (ids filled in); `params` lists its segments that are ids, for path mutation. */
  readonly path: string;
  readonly params?: readonly number[];
  /** A valid JSON body and the kinds of its fields; absent for routes without a JSON body. */
  readonly body?: Record<string, unknown>;
  readonly fields?: Readonly<Record<string, FieldKind>>;
  /** Reads query parameters (so a parameter that cannot be stored is refused). */
  readonly query?: boolean;
  /** Needs credentials (so garbage credentials are refused). */
  readonly authed: boolean;
}

export interface FuzzCase {
  readonly method: string;
  readonly target: string;
  readonly headers: Record<string, string>;
  readonly body?: Buffer;
  /** What was broken, for the failure report. */
  readonly what: string;
  /** Send the service's credentials for this request (signed for the relayer, over these exact bytes). */
  readonly withAuth: boolean;
}

const UNSAFE = ["\u0000", "\ud800", "\udfff", "a\udc00b", "x\u0000y"];
/** Valid but unusual text, mixed into mangled values so odd Unicode reaches every parser. */
const ODD = ["\u202e", "\ufeff", "😀", "e\u0301", "\uffff", "ﷺ", "\u2028", "𝔘𝔫𝔦"];
const WRONG: Record<FieldKind, readonly unknown[]> = {
  str: [12345, true, false, [], {}, ["a"], { a: 1 }, "", "   ", null],
  optstr: [12345, true, [], {}, ["a"], { a: 1 }],
  num: [true, "10", [], {}, -1, 0, 1.5, "abc"],
  arr: ["x", 5, {}, true],
  obj: ["x", 5, true, [1]],
};
const BROKEN_JSON = ['{', '{"text":', '{"text": "a",}', "nul", "{'text':'x'}", '{"a":1}}', "[", '{"a":tru}', '{"a":"\\x"}', '{"a":"\\ud800"', "\u0000"];
const NON_OBJECT = ["[]", "5", '"text"', "null", "true", '[{"text":"x"}]', "-0", "1e999"];
const CONTENT_TYPES = ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=zz", "application/json; charset=utf-16", "", "application/json\u00e9", "image/png"];
const PATH_GARBAGE = ["%00", "%ZZ", "%", "%F0%9F%98%80", "..", "%2e%2e", "%E2%80%AE", "%EF%BB%BF", "a".repeat(2000), "%C0%AF", "%ED%A0%80", "0x" + "f".repeat(70), "-1", "null"];

const oddText = (r: Rand) => pick(r, ODD) + "x".repeat(Math.floor(r() * 4)) + pick(r, ODD);
const json = (v: unknown) => Buffer.from(JSON.stringify(v));

function withField(body: Record<string, unknown>, field: string, value: unknown): Record<string, unknown> {
  return { ...body, [field]: value };
}

/** One bad request against `t`. */
export function badRequest(r: Rand, t: Target): FuzzCase {
  const base = { method: t.method, target: t.path, headers: {} as Record<string, string>, withAuth: true };
  const jsonHeaders = { "content-type": "application/json" };
  const kinds: string[] = ["path", "path"];
  if (t.authed) kinds.push("auth", "auth");
  if (t.query) kinds.push("query", "query");
  if (t.body) kinds.push("broken", "broken", "nonobject", "unsafe", "unsafe", "unsafekey", "wrongtype", "wrongtype", "wrongtype", "ctype", "method", "huge");
  if (t.fields && Object.values(t.fields).includes("str")) kinds.push("missing");
  const kind = pick(r, kinds);
  const fields = Object.entries(t.fields ?? {});
  switch (kind) {
    case "broken": {
      const text = r() < 0.2 ? Buffer.from([0xff, 0xfe, 0x7b, 0x22, 0x80]) : Buffer.from(pick(r, BROKEN_JSON) + (r() < 0.3 ? oddText(r) : ""));
      return { ...base, headers: jsonHeaders, body: text, what: `broken JSON ${JSON.stringify(text.toString("latin1").slice(0, 40))}` };
    }
    case "nonobject": {
      const v = pick(r, NON_OBJECT);
      return { ...base, headers: jsonHeaders, body: Buffer.from(v), what: `non-object JSON ${v}` };
    }
    case "unsafe": {
      const strs = fields.filter(([, k]) => k === "str" || k === "optstr");
      const [f] = strs.length ? pick(r, strs) : ["note", "optstr"];
      const v = oddText(r) + pick(r, UNSAFE) + oddText(r);
      return { ...base, headers: jsonHeaders, body: json(withField(t.body!, f, v)), what: `unstorable text in ${f}` };
    }
    case "unsafekey": {
      const key = pick(r, ["\u0000", "a\ud800", "\udc00"]);
      return { ...base, headers: jsonHeaders, body: json({ ...t.body!, [key]: { nested: oddText(r) } }), what: "unstorable field name" };
    }
    case "wrongtype": {
      const [f, k] = pick(r, fields);
      const v = pick(r, WRONG[k]);
      return { ...base, headers: jsonHeaders, body: json(withField(t.body!, f, v)), what: `${f} = ${JSON.stringify(v)}` };
    }
    case "missing": {
      const [f] = pick(r, fields.filter(([, k]) => k === "str"));
      const b = { ...t.body! };
      delete b[f];
      return { ...base, headers: jsonHeaders, body: json(b), what: `${f} missing` };
    }
    case "huge": {
      const strs = fields.filter(([, k]) => k === "str" || k === "optstr");
      const [f] = strs.length ? pick(r, strs) : [fields[0][0]];
      const size = pick(r, [4096, 70_000, 1_200_000, 2_500_000]);
      // over every string field's limit only from 1.2 MB on; shorter ones go where the field is short (names)
      const target = size >= 1_200_000 ? f : (strs.find(([n]) => /name|namespace|label|signature|kind|scope/.test(n))?.[0] ?? null);
      if (!target) return { ...base, headers: jsonHeaders, body: Buffer.from("{" + "x".repeat(size)), what: `broken JSON of ${size} bytes` };
      return { ...base, headers: jsonHeaders, body: json(withField(t.body!, target, "é".repeat(size / 2))), what: `${target} of ${size} bytes` };
    }
    case "ctype": {
      const body = Buffer.from(pick(r, [...BROKEN_JSON, ...NON_OBJECT]));
      return { ...base, headers: { "content-type": pick(r, CONTENT_TYPES).replace(/[^\x20-\xff]/g, "") }, body, what: "wrong content type and a body that is not a JSON object" };
    }
    case "method": {
      const m = pick(r, ["PUT", "PATCH", "POST"].filter((x) => x !== t.method));
      return { ...base, method: m, headers: jsonHeaders, body: Buffer.from(pick(r, BROKEN_JSON)), what: `${m} with broken JSON` };
    }
    case "query": {
      const q = pick(r, ["x=%00", "limit=%00", "cursor=%00abc", "q=a%00b", "%00=1", "type=%00"]);
      return { ...base, target: `${t.path}?${q}`, what: `query ${q}`, ...(t.body ? { headers: jsonHeaders, body: json(t.body) } : {}) };
    }
    case "auth": {
      const h = pick(r, [
        { authorization: "Bearer " + "z".repeat(Math.floor(r() * 80)) },
        { authorization: "Bearer mrc_" + "0".repeat(64) },
        { authorization: "Basic Zm9vOmJhcg==" },
        { authorization: "Bearer \u00e9\u00e8" },
        { "x-public-key": "zz", "x-signature": "00", "x-timestamp": "abc", "x-nonce": "n" },
        { "x-public-key": "a".repeat(64), "x-signature": "b".repeat(128), "x-timestamp": String(Math.floor(Date.now() / 1000)), "x-nonce": "\u00ff" },
        {},
      ] as Record<string, string>[]);
      return { ...base, withAuth: false, headers: { ...h, ...(t.body ? jsonHeaders : {}) }, body: t.body ? json(t.body) : undefined, what: `credentials ${JSON.stringify(h).slice(0, 60)}` };
    }
    default: {
      const segs = t.path.split("/");
      const garbage = pick(r, PATH_GARBAGE) + (r() < 0.3 ? encodeURIComponent(oddText(r)) : "");
      if (t.params?.length && r() < 0.7) segs[pick(r, t.params)] = garbage;
      else segs.push(garbage);
      const body = t.body ? json(t.body) : undefined;
      return { ...base, target: segs.join("/"), headers: body ? jsonHeaders : {}, body, what: `path ${segs.join("/").slice(0, 80)}` };
    }
  }
}
