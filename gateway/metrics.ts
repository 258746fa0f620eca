// Prometheus metrics of one service instance, with prom-client: a registry per instance (tests and `memrelay start`
// run several services in one process, so nothing goes to the global registry), the default process metrics, and
// typed counters, histograms and gauges under the service's prefix. `GET /metrics` serves `render()`.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type CounterConfiguration, type GaugeConfiguration, type HistogramConfiguration } from "prom-client";
import type { Handler, Reply, Request } from "./http.ts";

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export class ServiceMetrics {
  readonly registry = new Registry();
  readonly requests: Counter<"route" | "status">;
  readonly duration: Histogram<"route">;

  constructor(readonly prefix: string) {
    collectDefaultMetrics({ register: this.registry, prefix: `${prefix}_` });
    this.requests = this.counter("http_requests_total", "HTTP requests answered, by route pattern and status", ["route", "status"]);
    this.duration = this.histogram("http_request_duration_seconds", "Time to answer an HTTP request, by route pattern", ["route"]);
  }

  counter<L extends string>(name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
    return new Counter({ name: `${this.prefix}_${name}`, help, labelNames, registers: [this.registry] } as CounterConfiguration<L>);
  }

  histogram<L extends string>(name: string, help: string, labelNames: readonly L[] = [], buckets = LATENCY_BUCKETS): Histogram<L> {
    return new Histogram({ name: `${this.prefix}_${name}`, help, labelNames, buckets, registers: [this.registry] } as HistogramConfiguration<L>);
  }

  /** `collect` runs at scrape time (set the gauge's values in it). */
  gauge<L extends string>(name: string, help: string, labelNames: readonly L[] = [], collect?: (g: Gauge<L>) => Promise<void> | void): Gauge<L> {
    return new Gauge({
      name: `${this.prefix}_${name}`,
      help,
      labelNames,
      registers: [this.registry],
      ...(collect ? { collect(this: Gauge<L>) { return collect(this); } } : {}),
    } as GaugeConfiguration<L>);
  }

  async reply(): Promise<Reply> {
    return { status: 200, headers: { "content-type": this.registry.contentType }, body: await this.registry.metrics() };
  }
}

/**
 * A route handler with request metrics: a count by route and status, and a duration histogram. `toReply` turns the
 * errors a service knows into replies; anything else is counted as a 500 and rethrown (the HTTP layer answers 500
 * and logs it). Label children are resolved once per route, not per request.
 */
export function measured(metrics: ServiceMetrics, name: string, h: Handler, toReply: (err: unknown, req: Request) => Reply | undefined): Handler {
  const timer = metrics.duration.labels(name);
  const byStatus = new Map<number, Counter.Internal>();
  const count = (status: number) => {
    let c = byStatus.get(status);
    if (!c) byStatus.set(status, (c = metrics.requests.labels(name, String(status))));
    c.inc();
  };
  return async (req) => {
    const t0 = performance.now();
    try {
      const reply = await h(req);
      count(reply.status);
      return reply;
    } catch (err) {
      const reply = toReply(err, req);
      count(reply?.status ?? 500);
      if (reply) return reply;
      throw err;
    } finally {
      timer.observe((performance.now() - t0) / 1000);
    }
  };
}
