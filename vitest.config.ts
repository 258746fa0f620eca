import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Black-box suites start their own nats-server and database; keep CPU contention bounded on 2 cores.
    maxWorkers: 2,
    fileParallelism: true,
  },
});
