// The operator commands' progress bar: in a terminal it redraws in place; otherwise (a log file, a pipe) it writes a
// plain line at most every 5 seconds and the final one exactly once.
import { describe, expect, it } from "vitest";
import { ProgressBar } from "../cli/progress.ts";

const sink = (isTTY: boolean) => {
  const writes: string[] = [];
  return { writes, out: { isTTY, write: (s: string) => writes.push(s) } as unknown as NodeJS.WriteStream };
};

describe("ProgressBar", () => {
  it("writes the first and the final line once when not a terminal, however often it is updated", () => {
    const { writes, out } = sink(false);
    const bar = new ProgressBar("re-embedding", out);
    for (let i = 0; i <= 100; i++) bar.update(i, 100, "memories");
    bar.update(100, 100, "memories");
    expect(writes).toHaveLength(2);
    expect(writes[0]).toMatch(/0\.0% 0\/100 memories\n$/);
    expect(writes[1]).toMatch(/100\.0% 100\/100 memories\n$/);
  });

  it("redraws in place in a terminal and ends with the final state", () => {
    const { writes, out } = sink(true);
    const bar = new ProgressBar("replay", out);
    bar.update(0, 10);
    bar.update(10, 10);
    bar.finish("done");
    expect(writes.every((w, i) => i === writes.length - 1 || w.startsWith("\r"))).toBe(true);
    expect(writes.at(-2)).toMatch(/10\/10/);
    expect(writes.at(-1)).toBe("\ndone\n");
  });
});
