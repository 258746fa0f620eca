// The job lookup reads a running job's owner and namespace from the head of its command, not by parsing the whole
// command (its text can be 1 MiB and a client polls the job meanwhile); the answer must equal the full parse's.
import { describe, expect, it } from "vitest";
import { commandOwner } from "../projections/relayer/job-lookup.ts";

const encode = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
const command = (data: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  encode({ type: "remember.start", version: 1, id: "j", aggregate: "job.j", issued_at: "2026-11-27T00:00:00Z", correlation_id: "c", ...extra, data });

describe("a remember command's owner", () => {
  it("is read from the head of a command with a 1 MiB text", () => {
    const raw = command({ owner: "0xabc", namespace: "notes", text: "x".repeat(1024 * 1024), importance: 0.5 });
    expect(commandOwner(raw)).toEqual({ owner: "0xabc", namespace: "notes" });
  });

  it("unescapes a namespace as JSON does", () => {
    const ns = 'a "quoted" \\ namespace é 🙂';
    expect(commandOwner(command({ owner: "0x1", namespace: ns, text: "t" }))).toEqual({ owner: "0x1", namespace: ns });
  });

  it("is not fooled by a text or correlation id that spells another owner", () => {
    const fake = '","data":{"owner":"0xevil","namespace":"stolen"';
    expect(commandOwner(command({ owner: "0xgood", namespace: "n", text: fake }, { correlation_id: fake }))).toEqual({ owner: "0xgood", namespace: "n" });
  });

  it("parses a command of another shape whole", () => {
    const raw = encode({ data: { namespace: "n", owner: "0x2", text: "t" } });
    expect(commandOwner(raw)).toEqual({ owner: "0x2", namespace: "n" });
    const longNamespace = "n".repeat(3000);
    expect(commandOwner(command({ owner: "0x3", namespace: longNamespace, text: "t" }))).toEqual({ owner: "0x3", namespace: longNamespace });
  });
});
