// The blob store benchmark's measurement: closed-loop load on a number of connections, and the comparison of the
// service, the raw backend and the HTTP floor in alternating slices, with the CPU each side cost and how busy the
// rest of the machine was.
import { readFileSync } from "node:fs";

export interface Scenario {
  ops: number;
  seconds: number;
  ops_per_s: number;
  mib_per_s: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
}

const MiB = 1024 * 1024;

function percentile(sorted: Float64Array, p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

interface Sample {
  lat: number[];
  errors: number;
  seconds: number;
  /** every op run, warm-up included (CPU is measured over the whole slice) */
  all: number;
}

/** Runs `op` on `concurrency` workers for `seconds` (after `warmup` seconds), collecting latencies. */
async function load(concurrency: number, seconds: number, op: (worker: number, i: number) => Promise<boolean>, warmup = 0.3): Promise<Sample> {
  const lat: number[] = [];
  let errors = 0;
  const warmEnd = performance.now() + warmup * 1000;
  const end = warmEnd + seconds * 1000;
  let counter = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (;;) {
        const s = performance.now();
        if (s >= end) return;
        const ok = await op(w, counter++).catch(() => false);
        if (s < warmEnd) continue;
        if (ok) lat.push(performance.now() - s);
        else errors++;
      }
    }),
  );
  // ops started in the window, over the window plus the tail of the last ones still running at its end
  return { lat, errors, seconds: (Math.max(end, performance.now()) - warmEnd) / 1000, all: counter };
}

function summarise(samples: Sample[], size: number): Scenario {
  const lat = samples.flatMap((x) => x.lat);
  const seconds = samples.reduce((a, x) => a + x.seconds, 0);
  const sorted = Float64Array.from(lat).sort();
  const r = (n: number) => Math.round(n * 1000) / 1000;
  return {
    ops: lat.length,
    seconds: r(seconds),
    ops_per_s: Math.round(lat.length / seconds),
    mib_per_s: r((lat.length * size) / MiB / seconds),
    p50_ms: r(percentile(sorted, 50)),
    p99_ms: r(percentile(sorted, 99)),
    errors: samples.reduce((a, x) => a + x.errors, 0),
  };
}

/**
 * Service, backend and floor alternate in short slices, each in every position, so that whatever else the machine
 * is doing weighs on every side of the ratio alike.
 */
/** The processes behind the service besides its own: nats-server, and the Postgres backends serving its database. */
export interface Backing {
  readonly natsPid: number;
  /** Backend process ids connected to the bench database now. */
  readonly postgresPids: () => Promise<number[]>;
}

/** CPU ms the backing processes used between two calls (backends that came and went in between are missed). */
async function backingCpu(b: Backing): Promise<() => Promise<{ nats: number; postgres: number }>> {
  const nats0 = cpuMsOf(b.natsPid);
  const pg0 = new Map((await b.postgresPids()).map((pid) => [pid, cpuMsOf(pid)]));
  return async () => {
    let postgres = 0;
    for (const pid of await b.postgresPids()) postgres += cpuMsOf(pid) - (pg0.get(pid) ?? 0);
    return { nats: cpuMsOf(b.natsPid) - nats0, postgres };
  };
}

export async function compare(
  ctx: { conns: number; seconds: number; size: number; servicePid: number; backing: Backing },
  service: (w: number, i: number) => Promise<boolean>,
  backend: (w: number, i: number) => Promise<boolean>,
  floor: (w: number, i: number) => Promise<boolean>,
) {
  // Each side takes every position in turn (slices: a multiple of the three sides). A fixed order favoured one side:
  // the raw side runs in this process, and its garbage and CPU debt landed on whichever HTTP side came next (measured:
  // +150 µs of client CPU per 1 MiB read on the side after it, whichever it was).
  const slices = 3 * Math.max(1, Math.round(ctx.seconds / 3));
  const slice = ctx.seconds / slices;
  const m0 = machineCpuMs();
  const own0 = cpuMsOf(process.pid) + cpuMsOf(ctx.servicePid);
  const b: Sample[] = [];
  let backendCpu = 0;
  /**
   * One HTTP side: its samples, and the CPU the service process, this load generator (part of what the raw side does
   * not pay), nats-server and Postgres (the service's event log and read models) used while it ran.
   */
  const httpSide = (run: (w: number, i: number) => Promise<boolean>) => {
    const side = { samples: [] as Sample[], cpu: 0, client: 0, nats: 0, postgres: 0 };
    const measure = async () => {
      const t0 = cpuMsOf(ctx.servicePid);
      const l0 = process.cpuUsage();
      const k0 = await backingCpu(ctx.backing);
      side.samples.push(await load(ctx.conns, slice, run));
      side.cpu += cpuMsOf(ctx.servicePid) - t0;
      side.client += cpuMs(process.cpuUsage(l0));
      const k = await k0();
      side.nats += k.nats;
      side.postgres += k.postgres;
    };
    return { side, measure };
  };
  const svc = httpSide(service);
  const flr = httpSide(floor);
  const sides = [
    async () => {
      const c0 = process.cpuUsage();
      b.push(await load(ctx.conns, slice, backend));
      backendCpu += cpuMs(process.cpuUsage(c0));
    },
    svc.measure,
    flr.measure,
  ];
  for (let i = 0; i < slices; i++) for (let j = 0; j < sides.length; j++) await sides[(i + j) % sides.length]();
  const m1 = machineCpuMs();
  const own = cpuMsOf(process.pid) + cpuMsOf(ctx.servicePid) - own0;
  const span = Math.max(1, m1.total - m0.total);
  const sv = summarise(svc.side.samples, ctx.size);
  const bk = summarise(b, ctx.size);
  const fl = summarise(flr.side.samples, ctx.size);
  const perOp = (cpuMs: number, xs: Sample[]) => Math.round((cpuMs * 1000) / Math.max(1, xs.reduce((a, x) => a + x.all, 0)));
  const costs = (x: typeof svc.side) => ({
    cpu_us_per_op: perOp(x.cpu, x.samples),
    client_cpu_us_per_op: perOp(x.client, x.samples),
    nats_cpu_us_per_op: perOp(x.nats, x.samples),
    postgres_cpu_us_per_op: perOp(x.postgres, x.samples),
  });
  return {
    service: { ...sv, ...costs(svc.side) },
    backend: { ...bk, cpu_us_per_op: perOp(backendCpu, b) },
    http_floor: { ...fl, ...costs(flr.side) },
    throughput_ratio: round(sv.ops_per_s / bk.ops_per_s),
    overhead_pct: round((bk.ops_per_s / sv.ops_per_s - 1) * 100),
    overhead_over_http_floor_pct: round((fl.ops_per_s / sv.ops_per_s - 1) * 100),
    // share of the machine (100 % = all cores) used while this comparison ran, and by processes other than the
    // bench and the service (nats-server and Postgres count as other here, as do unrelated workloads)
    machine_cpu_pct: Math.round(((m1.busy - m0.busy) / span) * 100),
    other_processes_cpu_pct: Math.round(((m1.busy - m0.busy - own) / span) * 100),
  };
}

const cpuMs = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;

/** Machine-wide busy and total CPU time in ms (from /proc/stat). */
function machineCpuMs(): { busy: number; total: number } {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = f[3] + (f[4] ?? 0);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: (total - idle) * 10, total: total * 10 };
}

/** CPU time (user + system) a process has used, in ms (from /proc, 10 ms resolution); 0 once it is gone. */
function cpuMsOf(pid: number): number {
  let f: string;
  try {
    f = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return 0;
  }
  const fields = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

const round = (n: number) => Math.round(n * 1000) / 1000;
