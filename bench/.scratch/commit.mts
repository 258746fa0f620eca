import pg from "pg";
const c = new pg.Client({ connectionString: "postgres://postgres@127.0.0.1:5432/postgres" });
await c.connect();
await c.query("CREATE TEMP TABLE IF NOT EXISTS t (x int)");
await c.query("CREATE TABLE IF NOT EXISTS bench_commit_probe (x int)");
for (const sc of ["on", "off"]) {
  await c.query(`SET synchronous_commit = ${sc}`);
  const lat: number[] = [];
  for (let i = 0; i < 100; i++) { const t = performance.now(); await c.query("BEGIN"); await c.query("INSERT INTO bench_commit_probe VALUES (1)"); await c.query("COMMIT"); lat.push(performance.now() - t); }
  lat.sort((a, b) => a - b);
  console.log(`synchronous_commit=${sc}: commit p50 ${lat[50].toFixed(2)} ms p99 ${lat[98].toFixed(2)} ms`);
}
await c.query("DROP TABLE bench_commit_probe");
await c.end();
