// Job ids derived from the signed request that asked for the jobs: a second arrival of the very same signed request (a
// client's retry after its answer was lost to a killed gateway or a publish that timed out yet landed) names the same
// jobs, so the work queue's id memory and the actor's "already started" rule make it store nothing twice, and the
// relayer answers it with the job ids of the first arrival (issue 32: a retry stored a memory under a second job).
import { createHash, type UUID } from "node:crypto";

/** The `index`th job of the request with digest `requestDigest` (signed-auth.ts): a UUID v4-shaped id. */
export function requestJobId(requestDigest: Uint8Array, index: number): UUID {
  const b = createHash("sha256").update(requestDigest).update(`job ${index}`).digest().subarray(0, 16);
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = b.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
