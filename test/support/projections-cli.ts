// Runs `memrelay replay` / `memrelay lag` in-process and captures what they print.
import { vi } from "vitest";
import { projectionsCommand } from "../../cli/projections.ts";

export async function runProjectionsCommand(cmd: "replay" | "lag", args: string[], env: Record<string, string>): Promise<{ rc: number; out: string }> {
  const lines: string[] = [];
  const spy = vi.spyOn(console, "log").mockImplementation((...a: unknown[]) => void lines.push(a.join(" ")));
  const errSpy = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
  try {
    const rc = await projectionsCommand(cmd, args, env);
    return { rc, out: lines.join("\n") };
  } finally {
    spy.mockRestore();
    errSpy.mockRestore();
  }
}
