// The deployment kit (deploy/, issue 32 §1) is checked, not just written: promtool validates the alert rules and the
// scrape configuration and runs the rules' unit tests; every metric the rules and the Grafana dashboard name exists
// in a running stack's /metrics (relayer, blob store, console); nats-server accepts the node configuration; every
// variables file a unit reads is in the kit. promtool comes from `bash scripts/setup-system.sh prometheus` (CI runs
// setup-system.sh first): when it is missing this test fails with that command instead of skipping.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import parse from "parse-prometheus-text-format";
import { request } from "undici";
import { startTestStack, type TestStack } from "./support/stack.ts";

const deploy = fileURLToPath(new URL("../deploy/", import.meta.url));
const rulesFile = join(deploy, "prometheus", "alerts.yml");
const dashboardFile = join(deploy, "grafana", "memrelay-dashboard.json");

function promtool(...args: string[]) {
  const r = spawnSync("promtool", args, { cwd: join(deploy, "prometheus"), encoding: "utf8", timeout: 60_000 });
  if ((r.error as NodeJS.ErrnoException | undefined)?.code === "ENOENT") {
    throw new Error("promtool is not installed: run `bash scripts/setup-system.sh prometheus` (it takes promtool from Debian's prometheus package)");
  }
  return { status: r.status, out: r.stdout + r.stderr };
}

/** Metric names (our prefixes) in PromQL text: `memrelay_…`, `console_…`, `blobstore_…`. */
const metricNames = (promql: string) => promql.match(/\b(?:memrelay|console|blobstore)_[a-z0-9_]+\b/g) ?? [];

/** The rule file's metric names, comments left out. */
const ruleMetrics = () => new Set(metricNames(readFileSync(rulesFile, "utf8").split("\n").filter((l) => !/^\s*#/.test(l)).join("\n")));

const dashboardMetrics = () => {
  const dashboard = JSON.parse(readFileSync(dashboardFile, "utf8")) as { panels: { title: string; targets: { expr: string }[] }[] };
  return new Set(dashboard.panels.flatMap((p) => p.targets.flatMap((t) => metricNames(t.expr))));
};

describe("alert rules and scrape configuration (promtool)", () => {
  it("promtool check rules accepts the alert rules", () => {
    const r = promtool("check", "rules", rulesFile);
    expect(r.status, r.out).toBe(0);
    expect(r.out).toMatch(/SUCCESS: [1-9]\d* rules found/);
  });

  it("promtool check config accepts the scrape configuration and the rule file it loads", () => {
    const r = promtool("check", "config", join(deploy, "prometheus", "prometheus.yml"));
    expect(r.status, r.out).toBe(0);
  });

  it("promtool test rules: each alert fires on what it is for and stays quiet otherwise", () => {
    const r = promtool("test", "rules", join(deploy, "prometheus", "alerts.test.yml"));
    expect(r.status, r.out).toBe(0);
  });

  it("the rules cover what the issue names: dead letters, projection lag, oldest pending job, low balance, upload failures", () => {
    const rules = readFileSync(rulesFile, "utf8");
    const names = ruleMetrics();
    for (const m of ["memrelay_dead_letters", "memrelay_projection_lag_events", "memrelay_oldest_remember_job_wait_seconds", "memrelay_alerts_stored"]) expect(names, m).toContain(m);
    expect(rules).toContain('memrelay_alerts_stored{alert="wallet.low_balance"}');
    expect(rules).toContain('memrelay_alerts_stored{alert="upload.failed"}');
  });
});

describe("deployment units", () => {
  it("every variables file a unit reads is in deploy/env", () => {
    const units = readdirSync(join(deploy, "systemd")).filter((f) => f.endsWith(".service"));
    expect(units.length).toBeGreaterThanOrEqual(5);
    for (const unit of units) {
      const files = [...readFileSync(join(deploy, "systemd", unit), "utf8").matchAll(/^EnvironmentFile=\/etc\/memrelay\/(\S+)$/gm)].map((m) => m[1]);
      expect(files.length, unit).toBeGreaterThan(0);
      for (const f of files) expect(existsSync(join(deploy, "env", f)), `${unit}: ${f}`).toBe(true);
    }
  });

  it("nats-server accepts the cluster node configuration", () => {
    const r = spawnSync(process.env.NATS_SERVER_BIN ?? "nats-server", ["-t", "-c", join(deploy, "nats", "node.conf")], {
      env: { ...process.env, NATS_SERVER_NAME: "n1", NATS_JS_KEY: "k" + "0".repeat(64) },
      encoding: "utf8",
    });
    expect(r.status, r.stdout + r.stderr).toBe(0);
  });
});

describe("every metric the rules and the dashboard name exists in a running stack's /metrics", () => {
  let t: TestStack;
  /** Family name -> type, over the relayer's, the blob store's and the console's /metrics. */
  const families = new Map<string, string>();
  beforeAll(async () => {
    t = await startTestStack();
    for (const base of [t.stack.relayerUrl, t.stack.blobstoreUrl, t.stack.consoleUrl]) {
      const r = await request(base + "/metrics");
      expect(r.statusCode).toBe(200);
      for (const f of parse(await r.body.text())) families.set(f.name, f.type);
    }
  }, 120_000);
  afterAll(async () => t?.teardown());

  /** A name exists as a family, or as a histogram's or summary's `_bucket`/`_sum`/`_count` series. */
  const exists = (name: string) => {
    if (families.has(name)) return true;
    const base = name.replace(/_(bucket|sum|count)$/, "");
    return base !== name && ["HISTOGRAM", "SUMMARY"].includes(families.get(base) ?? "");
  };

  it.each([
    ["alert rules", ruleMetrics],
    ["Grafana dashboard", dashboardMetrics],
  ])("%s", (_what, names) => {
    const named = [...names()];
    expect(named.length).toBeGreaterThan(3);
    expect(named.filter((n) => !exists(n))).toEqual([]);
  });
});
