import { describe, expect, it } from "vitest";
import { settlesWithin, withTimeout } from "../config/time-bounds.ts";

describe("settlesWithin", () => {
  it("is true for work that settles in time, false for work still running, and passes a rejection on", async () => {
    expect(await settlesWithin(1_000, Promise.resolve())).toBe(true);
    expect(await settlesWithin(20, new Promise(() => undefined))).toBe(false);
    await expect(settlesWithin(1_000, Promise.reject(new Error("refused")))).rejects.toThrow("refused");
  });
});

describe("withTimeout", () => {
  it("passes a value or a rejection on, and rejects naming what did not come when the work is late", async () => {
    expect(await withTimeout(1_000, Promise.resolve(7))).toBe(7);
    await expect(withTimeout(1_000, Promise.reject(new Error("refused")))).rejects.toThrow("refused");
    await expect(withTimeout(20, new Promise(() => undefined))).rejects.toThrow("no answer within 20 ms");
    await expect(withTimeout(20, new Promise(() => undefined), "no event delivered")).rejects.toThrow("no event delivered within 20 ms");
  });

  it("leaves no timer behind once the work has settled", async () => {
    const before = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    await withTimeout(60_000, Promise.resolve());
    await settlesWithin(60_000, Promise.resolve());
    expect(process.getActiveResourcesInfo().filter((r) => r === "Timeout").length).toBe(before);
  });
});
