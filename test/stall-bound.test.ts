// The stall bound (adapters/chain/stall-bound.ts): how long a wallet's transaction may go unanswered before its batch
// moves on, from the durations the pool saw lately.
import { describe, expect, it } from "vitest";
import { DEFAULT_STALL_BOUND, stallBound } from "../adapters/chain/stall-bound.ts";

describe("stallBound", () => {
  it("is the ceiling until enough calls have ended", () => {
    expect(stallBound([])).toBe(20_000);
    expect(stallBound([500, 600])).toBe(20_000);
  });

  it("is a few times the median of recent calls", () => {
    expect(stallBound([900, 1_000, 1_100])).toBe(4_000);
    // an even count: the mean of the middle two; one slow outlier moves it little
    expect(stallBound([1_000, 1_200, 1_400, 30_000])).toBe(4 * 1_300);
  });

  it("never goes under the floor, however fast recent calls were", () => {
    expect(stallBound([50, 60, 70])).toBe(3_000);
  });

  it("never goes over the ceiling, however slow recent calls were", () => {
    expect(stallBound([8_000, 9_000, 10_000])).toBe(20_000);
    expect(stallBound([100, 100, 100], { ...DEFAULT_STALL_BOUND, floorMs: 5_000, ceilingMs: 4_000 })).toBe(4_000);
  });
});
