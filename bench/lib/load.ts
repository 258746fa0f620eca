// HTTP load generation with undici: requests prepared (and signed) before the timed window, replayed by a fixed
// number of closed-loop workers over a connection pool, or open-loop at a fixed rate.
import { Pool } from "undici";
import { RequestSigner } from "../../client/signer.ts";

export interface Prepared {
  readonly method: "GET" | "POST";
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
}

export interface LoadResult {
  /** Latency of each request in ms, in completion order. */
  readonly latencies: Float64Array;
  readonly seconds: number;
  readonly errors: number;
  readonly statuses: Record<string, number>;
  readonly errorSamples: string[];
  /** Parsed JSON bodies when `keepBodies`. */
  readonly bodies?: unknown[];
}

/** Signs a JSON POST exactly as the client does (fresh nonce per request). */
export function signedPost(signer: RequestSigner, path: string, payload: unknown, extra: Record<string, string> = {}): Prepared {
  const body = JSON.stringify(payload);
  return { method: "POST", path, body, headers: { ...signer.headers("POST", path, body), "content-type": "application/json", ...extra } };
}

export function newPool(origin: string, connections: number): Pool {
  return new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
}

/** Closed loop: `concurrency` workers each send their next request when the previous answered. */
export async function closedLoop(pool: Pool, reqs: readonly Prepared[], concurrency: number, opts: { expect: number; keepBodies?: boolean; maxSeconds?: number }): Promise<LoadResult> {
  const latencies = new Float64Array(reqs.length);
  const statuses: Record<string, number> = {};
  const errorSamples: string[] = [];
  const bodies: unknown[] | undefined = opts.keepBodies ? new Array(reqs.length) : undefined;
  let errors = 0;
  let next = 0;
  // A time budget: no new request after it (on a slow or shared machine a fixed count could take minutes).
  const deadline = opts.maxSeconds ? performance.now() + opts.maxSeconds * 1000 : Infinity;
  const worker = async () => {
    for (;;) {
      if (performance.now() > deadline) return;
      const i = next++;
      if (i >= reqs.length) return;
      const r = reqs[i];
      const t0 = performance.now();
      try {
        const res = await pool.request({ method: r.method, path: r.path, headers: r.headers, body: r.body });
        const text = await res.body.text();
        latencies[i] = performance.now() - t0;
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
        if (res.statusCode !== opts.expect) {
          errors++;
          if (errorSamples.length < 5) errorSamples.push(`${res.statusCode} ${text.slice(0, 200)}`);
        } else if (bodies) bodies[i] = JSON.parse(text);
      } catch (err) {
        latencies[i] = performance.now() - t0;
        errors++;
        statuses.exception = (statuses.exception ?? 0) + 1;
        if (errorSamples.length < 5) errorSamples.push(String((err as Error)?.message ?? err));
      }
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, reqs.length) }, worker));
  const done = Math.min(next, reqs.length);
  return { latencies: latencies.subarray(0, done), seconds: (performance.now() - t0) / 1000, errors, statuses, errorSamples, bodies: bodies?.slice(0, done) };
}

/** Open loop: request i is sent at start + i / ratePerSec, whatever the state of earlier ones. */
export async function openLoop(
  pool: Pool,
  reqs: readonly Prepared[],
  ratePerSec: number,
  onAnswer: (i: number, status: number, body: string, sentAt: number, answeredAt: number) => void,
): Promise<{ seconds: number; errors: number; lateSends: number }> {
  let errors = 0;
  let lateSends = 0;
  const inflight: Promise<void>[] = [];
  const start = performance.now();
  for (let i = 0; i < reqs.length; i++) {
    const due = start + (i * 1000) / ratePerSec;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    else if (wait < -20) lateSends++;
    const r = reqs[i];
    const sentAt = performance.now();
    inflight.push(
      pool
        .request({ method: r.method, path: r.path, headers: r.headers, body: r.body })
        .then(async (res) => {
          const text = await res.body.text();
          onAnswer(i, res.statusCode, text, sentAt, performance.now());
          if (res.statusCode >= 300) errors++;
        })
        .catch(() => {
          errors++;
        }),
    );
  }
  await Promise.all(inflight);
  return { seconds: (performance.now() - start) / 1000, errors, lateSends };
}
