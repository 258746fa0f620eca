// Prometheus text exposition for a handful of counters and latency histograms, under one prefix.
import type { Handler, Reply, Request } from "./http.ts";
export class Metrics {
  private readonly counters = new Map<string, number>();
  private readonly hist = new Map<string, { buckets: number[]; counts: number[]; sum: number; n: number }>();
  private static readonly BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

  constructor(private readonly prefix: string) {}

  inc(name: string, labels: Record<string, string | number> = {}, by = 1): void {
    const key = this.key(name, labels);
    this.counters.set(key, (this.counters.get(key) ?? 0) + by);
  }

  observe(name: string, seconds: number, labels: Record<string, string | number> = {}): void {
    const key = this.key(name, labels);
    let h = this.hist.get(key);
    if (!h) this.hist.set(key, (h = { buckets: Metrics.BUCKETS, counts: Metrics.BUCKETS.map(() => 0), sum: 0, n: 0 }));
    for (let i = 0; i < h.buckets.length; i++) if (seconds <= h.buckets[i]) h.counts[i]++;
    h.sum += seconds;
    h.n++;
  }

  render(gauges: Record<string, number> = {}): string {
    const out: string[] = [];
    for (const [k, v] of this.counters) out.push(`${k} ${v}`);
    for (const [k, h] of this.hist) {
      const [name, labels] = splitKey(k);
      const sep = labels ? labels + "," : "";
      h.buckets.forEach((b, i) => out.push(`${name}_bucket{${sep}le="${b}"} ${h.counts[i]}`));
      out.push(`${name}_bucket{${sep}le="+Inf"} ${h.n}`, `${name}_sum${labels ? `{${labels}}` : ""} ${h.sum}`, `${name}_count${labels ? `{${labels}}` : ""} ${h.n}`);
    }
    for (const [k, v] of Object.entries(gauges)) out.push(`${this.prefix}_${k} ${v}`);
    return out.join("\n") + "\n";
  }

  private key(name: string, labels: Record<string, string | number>): string {
    const l = Object.entries(labels).map(([k, v]) => `${k}="${String(v).replace(/"/g, "")}"`).join(",");
    return `${this.prefix}_${name}${l ? `{${l}}` : ""}`;
  }
}

function splitKey(k: string): [string, string] {
  const i = k.indexOf("{");
  return i < 0 ? [k, ""] : [k.slice(0, i), k.slice(i + 1, -1)];
}

/**
 * A route handler with request metrics: a count by route and status, and a duration histogram. `toReply` turns the
 * errors a service knows into replies; anything else is counted as a 500 and rethrown (the HTTP layer answers 500
 * and logs it).
 */
export function measured(metrics: Metrics, name: string, h: Handler, toReply: (err: unknown, req: Request) => Reply | undefined): Handler {
  return async (req) => {
    const t0 = performance.now();
    try {
      const reply = await h(req);
      metrics.inc("http_requests_total", { route: name, status: reply.status });
      return reply;
    } catch (err) {
      const reply = toReply(err, req);
      metrics.inc("http_requests_total", { route: name, status: reply?.status ?? 500 });
      if (reply) return reply;
      throw err;
    } finally {
      metrics.observe("http_request_duration_seconds", (performance.now() - t0) / 1000, { route: name });
    }
  };
}
