// Unit: the compat script finds the jobs MemWal's e2e_test.py size checks started (it follows them to `done`, since
// the test itself only looks at the 202's body).
import { describe, expect, it } from "vitest";
import { sizeCheckJobs } from "./compat/memwal-python.ts";

const out = [
  "[pass] POST /api/remember → job_id=4d8a304d-c5d6-48ed-b2bb-5d77f35bb9ab, status=running",
  "\x1b[31m[FAIL] size_64kb_summarized: 64 KiB remember failed: {'job_id': '59d7364f-134d-4ac4-8979-5b087ce2cae2', 'status': 'running'}\x1b[0m",
  "[FAIL] size_large_accepted: large-size remember failed: {'job_id': '5927817e-7b45-4c3b-a7d1-40d44c02eae6', 'status': 'running'}",
  "  3 failure(s):",
  "    - size_64kb_summarized: 64 KiB remember failed: {'job_id': '59d7364f-134d-4ac4-8979-5b087ce2cae2', 'status': 'running'}",
  "    - size_large_accepted: large-size remember failed: {'job_id': '5927817e-7b45-4c3b-a7d1-40d44c02eae6', 'status': 'running'}",
].join("\n");

describe("sizeCheckJobs", () => {
  it("takes the 64 KiB and 512 KiB jobs from the size checks' failure lines once each (the summary repeats them), not other remembers", () => {
    expect(sizeCheckJobs(out)).toEqual([
      { size: "64 KiB", jobId: "59d7364f-134d-4ac4-8979-5b087ce2cae2" },
      { size: "512 KiB", jobId: "5927817e-7b45-4c3b-a7d1-40d44c02eae6" },
    ]);
  });

  it("finds none when the size checks did not print a job (a 4xx, or they passed)", () => {
    expect(sizeCheckJobs("[FAIL] size_large_accepted: HTTP Error 400: Bad Request\n[pass] POST /api/remember 524288 bytes → id=x")).toEqual([]);
  });
});
