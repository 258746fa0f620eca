// What every compatibility driver returns and is given (test/compat/run.ts): one row per client call, and the
// started stack the calls go to.
import type { Credentials } from "../../cli/credentials.ts";

export interface CompatRow {
  /** e.g. "TypeScript SDK (packages/sdk)" */
  readonly client: string;
  /** e.g. "rememberAsync + waitForRememberJob" */
  readonly call: string;
  readonly ok: boolean;
  /** Why it failed, what it answered, or why it did not run. */
  readonly detail?: string;
  /** Not run (a missing prerequisite, named in `detail`); neither a pass nor a failure. */
  readonly skipped?: boolean;
}

export interface CompatContext {
  /** Root of the MemWal checkout (MEMWAL_REPO). */
  readonly memwalRepo: string;
  readonly relayerUrl: string;
  /** `memrelay start`'s dev credential (its credential file). */
  readonly delegatePrivateKeyHex: string;
  readonly accountId: string;
  /** The whole credential file `memrelay start` wrote. */
  readonly credentials: Credentials;
  /** A scratch directory of this run (removed afterwards). */
  readonly workDir: string;
  /** Environment for child processes: HOME is the run's own. */
  readonly env: Readonly<Record<string, string>>;
}

/** A driver: runs one client's calls against the stack. */
export type CompatDriver = (ctx: CompatContext) => Promise<CompatRow[]>;

/** Times a call and turns its outcome into a row (the error message as detail, without a stack trace). */
export async function probe(client: string, call: string, fn: () => Promise<string | void>): Promise<CompatRow> {
  try {
    const detail = await fn();
    return { client, call, ok: true, ...(detail ? { detail } : {}) };
  } catch (err) {
    return { client, call, ok: false, detail: oneLine(err instanceof Error ? err.message : String(err)) };
  }
}

export const oneLine = (s: string, max = 240) => {
  const flat = s.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
};

const verdict = (r: CompatRow) => (r.skipped ? "skipped" : r.ok ? "pass" : "FAIL");

/** The table the README quotes: client → call → pass/fail, with the detail. */
export function markdownTable(rows: readonly CompatRow[]): string {
  const cell = (s: string) => s.replace(/\|/g, "\\|");
  return [
    "| client | call | result | detail |",
    "|---|---|---|---|",
    ...rows.map((r) => `| ${cell(r.client)} | ${cell(r.call)} | ${verdict(r)} | ${cell(r.detail ?? "")} |`),
  ].join("\n");
}

export function tally(rows: readonly CompatRow[]): string {
  const n = (f: (r: CompatRow) => boolean) => rows.filter(f).length;
  return `${n((r) => r.ok && !r.skipped)} passed, ${n((r) => !r.ok && !r.skipped)} failed, ${n((r) => !!r.skipped)} skipped`;
}
