// Admission of new agent sessions (spec/relayer.md, operator variables MCP_MAX_TOTAL_SESSIONS,
// MCP_MAX_SESSIONS_PER_IP, MCP_MAX_NEW_SESSIONS_PER_IP_PER_MIN). Checked before any credential is looked at, so a
// flood of forged bearers cannot hold transports open. Pure bookkeeping; the clock is injected.
export interface SessionLimitSettings {
  readonly maxTotal: number;
  readonly maxPerIp: number;
  readonly newPerIpPerMinute: number;
}

export type Admission = { readonly ok: true; readonly release: () => void } | { readonly ok: false; readonly reason: string; readonly retryAfterSecs: number };

const MINUTE = 60_000;

export class SessionLimits {
  private total = 0;
  private readonly perIp = new Map<string, number>();
  private readonly recent = new Map<string, number[]>();

  constructor(private readonly settings: SessionLimitSettings, private readonly now: () => number = Date.now) {}

  get open(): number {
    return this.total;
  }

  admit(ip: string): Admission {
    const t = this.now();
    const starts = (this.recent.get(ip) ?? []).filter((s) => s > t - MINUTE);
    if (this.total >= this.settings.maxTotal) return { ok: false, reason: `the server holds its maximum of ${this.settings.maxTotal} sessions`, retryAfterSecs: 30 };
    if ((this.perIp.get(ip) ?? 0) >= this.settings.maxPerIp) return { ok: false, reason: `this address holds its maximum of ${this.settings.maxPerIp} sessions; close one first`, retryAfterSecs: 30 };
    if (starts.length >= this.settings.newPerIpPerMinute) {
      return { ok: false, reason: `more than ${this.settings.newPerIpPerMinute} new sessions from this address in a minute`, retryAfterSecs: Math.max(1, Math.ceil((starts[0] + MINUTE - t) / 1000)) };
    }
    starts.push(t);
    this.recent.set(ip, starts);
    this.total++;
    this.perIp.set(ip, (this.perIp.get(ip) ?? 0) + 1);
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        this.total--;
        const n = (this.perIp.get(ip) ?? 1) - 1;
        if (n > 0) this.perIp.set(ip, n);
        else this.perIp.delete(ip);
      },
    };
  }

  /** Drops start times older than a minute (called by the sidecar's sweeper, so idle addresses leave no state). */
  prune(): void {
    const t = this.now();
    for (const [ip, starts] of this.recent) {
      const kept = starts.filter((s) => s > t - MINUTE);
      if (kept.length) this.recent.set(ip, kept);
      else this.recent.delete(ip);
    }
  }
}
