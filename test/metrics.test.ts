// Black-box: every service's `GET /metrics` is Prometheus text that a Prometheus parser reads with HELP and TYPE for
// each family: histograms typed as histograms, the default process metrics, and the job pipeline gauges (commands
// pending, projection checkpoints and lag, dead letters, stored alerts) whose values follow the work done.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import parse from "parse-prometheus-text-format";
import { request } from "undici";
import { startTestStack, type TestStack } from "./support/stack.ts";
import { deadLetterRecord, setAside } from "../eventlog/dead-letter.ts";
import { ALERT_SUBJECTS } from "../schemas/alerts.ts";

let t: TestStack;
beforeAll(async () => {
  t = await startTestStack();
}, 120_000);
afterAll(async () => t?.teardown());

async function scrape(base: string) {
  const r = await request(base + "/metrics");
  expect(r.statusCode).toBe(200);
  expect(String(r.headers["content-type"])).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await r.body.text();
  const families = parse(text);
  return { text, families, family: (name: string) => families.find((f) => f.name === name) };
}

describe("GET /metrics", () => {
  it.each([
    ["relayer", "memrelay"],
    ["blob store", "blobstore"],
    ["console", "console"],
  ])("%s: parses as Prometheus text, with HELP and TYPE on every family", async (service, prefix) => {
    const base = service === "relayer" ? t.stack.relayerUrl : service === "blob store" ? t.stack.blobstoreUrl : t.stack.consoleUrl;
    await request(base + "/health").then((r) => r.body.text());
    const { text, families, family } = await scrape(base);
    for (const f of families) {
      expect(text, f.name).toContain(`# HELP ${f.name} `);
      expect(text, f.name).toContain(`# TYPE ${f.name} `);
      expect(f.type, f.name).not.toBe("UNTYPED");
    }
    expect(family(`${prefix}_http_request_duration_seconds`)?.type).toBe("HISTOGRAM");
    expect(family(`${prefix}_http_requests_total`)?.type).toBe("COUNTER");
    expect(family(`${prefix}_process_cpu_user_seconds_total`)?.type).toBe("COUNTER");
    expect(family(`${prefix}_process_resident_memory_bytes`)?.type).toBe("GAUGE");
    expect(family(`${prefix}_projection_checkpoint`)?.type).toBe("GAUGE");
    expect(family(`${prefix}_projection_lag_events`)?.type).toBe("GAUGE");
    expect(family(`${prefix}_dead_letters`)?.type).toBe("GAUGE");
    expect(family(`${prefix}_alerts_stored`)?.type).toBe("GAUGE");
  });

  it("relayer: the pipeline gauges follow the work: checkpoints move, nothing left pending, dead letters counted", async () => {
    const before = await scrape(t.stack.relayerUrl);
    const checkpoint = (s: typeof before, projection: string) => Number(s.family("memrelay_projection_checkpoint")?.metrics.find((m) => m.labels?.projection === projection)?.value ?? 0);
    const client = await t.client();
    const accepted = await client.remember("The bakery on Rua Augusta opens at six", "metrics");
    await client.waitForJob(accepted.job_id);
    await setAside(t.stack.log, deadLetterRecord({ source: "projection", name: "memory_index", stream: "EVT", stream_seq: 999_999, subject: "evt.job.x", aggregate: "job.x", types: ["job.indexed"], error: "test", attempts: 3 }), "local");
    await new Promise((r) => setTimeout(r, 1_600)); // past the gauges' cache
    const after = await scrape(t.stack.relayerUrl);
    expect(checkpoint(after, "memory_index")).toBeGreaterThan(checkpoint(before, "memory_index"));
    expect(checkpoint(after, "job_status")).toBeGreaterThan(checkpoint(before, "job_status"));
    const lag = after.family("memrelay_projection_lag_events")!.metrics;
    expect(lag.map((m) => m.labels?.projection).sort()).toEqual(["alerts", "job_status", "lexical_index", "memory_index", "oauth"].sort());
    for (const m of lag) expect(Number(m.value)).toBe(0);
    const pending = after.family("memrelay_commands_pending")!.metrics.find((m) => m.labels?.consumer === "actor-job");
    expect(Number(pending?.value)).toBe(0);
    const dead = after.family("memrelay_dead_letters")!.metrics.find((m) => m.labels?.source === "projection" && m.labels?.name === "memory_index");
    expect(Number(dead?.value)).toBe(1);
    // The dead letter raised its operator alert: counted per kind, as the deploy kit's alert rules read it.
    const alerts = after.family("memrelay_alerts_stored")!.metrics;
    expect(alerts.find((m) => m.labels?.alert === ALERT_SUBJECTS.deadLetterProjection.slice("alerts.".length))?.value).toBe("1");
    const recalls = after.family("memrelay_http_requests_total")!.metrics.find((m) => m.labels?.route === "remember" && m.labels?.status === "202");
    expect(Number(recalls?.value)).toBe(1);
  });
});
