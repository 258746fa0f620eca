// The stall bound (adapters/chain/stall-bound.ts): how long a wallet's transaction may go unanswered before its batch
// moves on, from the durations the pool saw lately, and before it saw enough, from what a call is expected to take.
import { describe, expect, it } from "vitest";
import { DEFAULT_STALL_BOUND, stallBound } from "../adapters/chain/stall-bound.ts";

describe("stallBound", () => {
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

  describe("before enough calls have ended (a relayer just started)", () => {
    const withPrior = (priorMs: number) => ({ ...DEFAULT_STALL_BOUND, priorMs });

    it("given no expectation, when nothing or too little was seen, then it is the ceiling", () => {
      expect(stallBound([])).toBe(20_000);
      expect(stallBound([500, 600])).toBe(20_000);
    });

    it("given an expected call time, when nothing was seen, then it is a few times that, between floor and ceiling", () => {
      // testnet's slowest published owned-object finality
      expect(stallBound([], withPrior(900))).toBe(3_600);
      // a ledger that answers at once: the floor, as once calls have been seen
      expect(stallBound([], withPrior(0))).toBe(3_000);
      expect(stallBound([], withPrior(8_000))).toBe(20_000);
    });

    it("given an expected call time, when one call has ended, then that one answer alone does not move the bound", () => {
      expect(stallBound([100], withPrior(900))).toBe(3_600);
      expect(stallBound([4_000], withPrior(900))).toBe(3_600);
    });

    it("given an expected call time, when two calls have ended, then they outvote it", () => {
      expect(stallBound([2_000, 2_500], withPrior(900))).toBe(8_000);
      expect(stallBound([100, 200], withPrior(900))).toBe(3_000);
    });

    it("given an expected call time, when enough calls have ended, then only they count", () => {
      expect(stallBound([1_000, 1_100, 1_200], withPrior(4_000))).toBe(4_400);
      expect(stallBound([1_000, 1_100, 1_200], withPrior(0))).toBe(4_400);
    });
  });
});
