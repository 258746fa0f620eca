import { describe, expect, it } from "vitest";
import { settlesWithin } from "../adapters/settles-within.ts";

describe("settlesWithin", () => {
  it("is true for work that settles in time, false for work still running, and passes a rejection on", async () => {
    expect(await settlesWithin(1_000, Promise.resolve())).toBe(true);
    expect(await settlesWithin(20, new Promise(() => undefined))).toBe(false);
    await expect(settlesWithin(1_000, Promise.reject(new Error("refused")))).rejects.toThrow("refused");
  });
});
