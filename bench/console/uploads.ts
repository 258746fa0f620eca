// The console benchmark's upload measurement: for each size and concurrency, the same bytes direct to the blob store,
// through the bare relay floor and through the console, taking turns in slices, with the CPU each process spent.
import { randomBytes } from "node:crypto";
import { request, type Agent } from "undici";
import { pct, round, type UploadScenario } from "./results.ts";
import type { Meter } from "./meter.ts";
import type { ServiceInfo } from "./services.ts";
import type { BenchSession } from "./session.ts";

const MiB = 1024 * 1024;

const SIDES = ["direct", "floor", "console"] as const;
type Side = (typeof SIDES)[number];
/** Slices per side in an upload scenario. */
const ROUNDS = 3;
interface SideTotals {
  lat: number[];
  seconds: number;
  /** time after the slices until their uploads were completed (console) */
  settleSeconds: number;
  /** CPU seconds per metered process */
  cpu: number[];
  busy: number;
  total: number;
}

/** Runs `op` on `concurrency` workers for `seconds` after a warm-up; returns latencies (ms) and elapsed seconds. */
async function load(concurrency: number, seconds: number, op: () => Promise<void>, warmupOps = 2): Promise<{ lat: number[]; seconds: number }> {
  for (let i = 0; i < warmupOps; i++) await op();
  const lat: number[] = [];
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        await op();
        lat.push(performance.now() - t);
      }
    }),
  );
  return { lat, seconds: (performance.now() - t0) / 1000 };
}

export interface UploadRun extends BenchSession {
  readonly agent: Agent;
  readonly info: ServiceInfo;
  readonly relayUrl: string;
  /** CPU seconds of the processes named in `meterNames`, in that order, and of the whole machine */
  readonly meter: () => Meter;
  readonly meterNames: readonly string[];
  /** measured seconds per scenario */
  readonly seconds: number;
  /** concurrent uploads: every size is measured at each of these */
  readonly levels: readonly number[];
  /** upload sizes in MiB */
  readonly sizes: readonly number[];
}

export async function measureUploads(run: UploadRun): Promise<UploadScenario[]> {
  const { say, db, c, key, spaceId, agent, info, relayUrl, meter, meterNames, seconds, levels, sizes } = run;
  const uploads: UploadScenario[] = [];
  for (const sizeMiB of sizes) for (const concurrency of levels) {
    const payload = randomBytes(sizeMiB * MiB);
    // direct: the same bytes, the same concurrency, into one blob-store bucket of the console's own account
    const directBucket = `bench-direct-${sizeMiB}-${concurrency}`;
    await request(`${info.blobstoreUrl}/api/v1/buckets`, { method: "POST", dispatcher: agent, headers: { authorization: `Bearer ${info.storageApiKey}`, "content-type": "application/json" }, body: JSON.stringify({ name: directBucket }) }).then((r) => r.body.dump());
    let n = 0;
    const mark = (what: string) => process.env.BENCH_CPU_PROF && say(`  mark ${what} ${process.hrtime.bigint() / 1000n}`);
    const bucket = await c.createPrivateBucket(spaceId, `bench-${sizeMiB}mib-${concurrency}`, key.service_key!.secret_key);
    // let the access index mirror the grant
    for (;;) {
      try {
        await c.upload(bucket.bucket_id, { bytes: Buffer.from("warm"), filename: "warm" });
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    // distinct bytes per write (content addressing would otherwise deduplicate): vary the first 8 bytes
    const distinct = () => {
      const body = Buffer.from(payload);
      body.writeDoubleLE(Math.random(), 0);
      return body;
    };
    const ids: string[] = [];
    const sides: Record<Side, { op: () => Promise<void>; settle?: (from: number) => Promise<void> }> = {
      direct: {
        op: async () => {
          const r = await request(`${info.blobstoreUrl}/api/v1/buckets/${directBucket}/blobs/o-${n++}`, { method: "PUT", dispatcher: agent, headers: { authorization: `Bearer ${info.storageApiKey}`, "content-type": "application/octet-stream" }, body: distinct() });
          await r.body.dump();
          if (r.statusCode !== 201) throw new Error(`direct write answered ${r.statusCode}`);
        },
      },
      // the relay floor: the same bytes through a bare HTTP relay into the same bucket
      floor: {
        op: async () => {
          const r = await request(`${relayUrl}/relay/${directBucket}/r-${n++}`, { method: "PUT", dispatcher: agent, headers: { "content-type": "application/octet-stream" }, body: distinct() });
          await r.body.dump();
          if (r.statusCode !== 202) throw new Error(`relay floor answered ${r.statusCode}`);
        },
      },
      console: {
        op: async () => void ids.push((await c.upload(bucket.bucket_id, { bytes: distinct(), filename: `f-${n++}.bin` })).id),
        // Completion is observed in the read model from this process (no polling load on the console); a slice
        // ends once its uploads are completed, so no job of it runs during another side's slice.
        settle: async (from) => {
          const t0 = performance.now();
          for (;;) {
            const r = await db.query<{ done: string; other: string }>(
              "SELECT count(*) FILTER (WHERE status = 'completed')::text AS done, count(*) FILTER (WHERE status NOT IN ('uploading', 'completed'))::text AS other FROM console_files WHERE file_id = ANY($1::uuid[])",
              [ids.slice(from)],
            );
            if (Number(r.rows[0].other) > 0) throw new Error("an upload did not complete");
            if (Number(r.rows[0].done) === ids.length - from) return;
            if (performance.now() - t0 > 120_000) throw new Error("uploads did not complete within 120 s");
            await new Promise((res) => setTimeout(res, 10));
          }
        },
      },
    };
    // The sides take turns in short slices, each side in every position once: the machine's state drifts over a
    // run (the page cache fills with the written blobs and writing into it gets dearer), which would otherwise
    // favour whichever side runs first.
    const acc = Object.fromEntries(SIDES.map((k) => [k, { lat: [] as number[], seconds: 0, settleSeconds: 0, cpu: meterNames.map(() => 0), busy: 0, total: 0 }])) as Record<Side, SideTotals>;
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < SIDES.length; i++) {
        const side = SIDES[(round + i) % SIDES.length];
        const from = ids.length;
        mark(`${side} ${sizeMiB}x${concurrency} start`);
        const a = meter();
        const r = await load(concurrency, seconds / ROUNDS, sides[side].op);
        const t = performance.now();
        await sides[side].settle?.(from);
        const b = meter();
        mark(`${side} end`);
        const t2 = acc[side];
        t2.lat.push(...r.lat);
        t2.seconds += r.seconds;
        t2.settleSeconds += (performance.now() - t) / 1000;
        b.procs.forEach((x, j) => (t2.cpu[j] += x - a.procs[j]));
        t2.busy += b.busy - a.busy;
        t2.total += b.total - a.total;
      }
    }
    const { direct, floor, console: accepted } = acc;
    const completedLat = (
      await db.query<{ ms: number }>("SELECT extract(epoch FROM upload_finished_at - created_at) * 1000 AS ms FROM console_files WHERE file_id = ANY($1::uuid[])", [ids])
    ).rows.map((r) => Number(r.ms));
    const count = accepted.lat.length;
    const perMiB = (t: SideTotals) => t.cpu.map((x) => round((x * 1000) / Math.max(1, t.lat.length * sizeMiB), 1));
    const [cpuDirect, cpuFloor, cpuConsole] = [perMiB(direct), perMiB(floor), perMiB(accepted)];
    const busy = (t: SideTotals) => round(t.busy / Math.max(1e-9, t.total), 2);
    const directMiBs = (direct.lat.length * sizeMiB) / direct.seconds;
    const floorMiBs = (floor.lat.length * sizeMiB) / floor.seconds;
    const acceptedMiBs = (count * sizeMiB) / accepted.seconds;
    const completedMiBs = (count * sizeMiB) / (accepted.seconds + accepted.settleSeconds);
    const s: UploadScenario = {
      size_mib: sizeMiB,
      concurrency,
      uploads: count,
      direct_mib_s: round(directMiBs, 1),
      accepted_mib_s: round(acceptedMiBs, 1),
      completed_mib_s: round(completedMiBs, 1),
      ratio_accepted: round(acceptedMiBs / directMiBs),
      floor_mib_s: round(floorMiBs, 1),
      ratio_floor: round(floorMiBs / directMiBs),
      ratio_completed: round(completedMiBs / directMiBs),
      direct_p50_ms: round(pct(direct.lat, 50), 1),
      accepted_p50_ms: round(pct(accepted.lat, 50), 1),
      completed_p50_ms: round(pct(completedLat, 50), 1),
      cpu_ms_per_mib: { processes: meterNames, direct: cpuDirect, floor: cpuFloor, console: cpuConsole },
      machine_busy: { direct: busy(direct), console: busy(accepted) },
    };
    say(`  CPU ms per MiB (${meterNames.join(", ")}): direct ${cpuDirect.join(" / ")}, relay floor ${cpuFloor.join(" / ")}, console ${cpuConsole.join(" / ")}; machine busy ${s.machine_busy.direct} / ${s.machine_busy.console}`);
    say(`upload ${sizeMiB} MiB ×${concurrency}: direct ${s.direct_mib_s} MiB/s, relay floor ${s.floor_mib_s} MiB/s (×${s.ratio_floor}), console ${s.accepted_mib_s} MiB/s at 202 (×${s.ratio_accepted}), ${s.completed_mib_s} MiB/s completed (×${s.ratio_completed})`);
    uploads.push(s);
  }
  return uploads;
}
