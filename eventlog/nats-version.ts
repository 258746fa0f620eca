// Which nats-server may hold a replicated event log. nats-server 2.9.10 (Debian bookworm's) lets stream replicas
// diverge when a node is killed or paused while clients write: the short chaos run found two nodes holding different
// events at the same stream sequence, and read models fed from the divergent node skipped commits (jobs left
// `uploaded` with their `job.indexed` in the log) in 4 of 14 runs; 2.10.27 (Debian trixie's) in none of 11
// (bench/NOTES.md, "Issue 32, stop 40"). One node (R1) has no replicas to diverge, so 2.9 still serves it.

/** The oldest nats-server a replicated (R3) event log runs on. */
export const MIN_REPLICATED_VERSION = [2, 10] as const;

/** [major, minor, patch] of a version string ("2.10.27", "v2.9.10", "nats-server: v2.10.27"), or undefined. */
export function parseServerVersion(text: string): [number, number, number] | undefined {
  const m = /(\d+)\.(\d+)\.(\d+)/.exec(text);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

/** Why the nats-server of `version` (any text parseServerVersion reads) cannot hold a replicated event log, or undefined when it can. */
export function replicationRefusal(version: string): string | undefined {
  const v = parseServerVersion(version);
  const [major, minor] = MIN_REPLICATED_VERSION;
  if (v && (v[0] > major || (v[0] === major && v[1] >= minor))) return undefined;
  return (
    `nats-server ${v ? v.join(".") : "of an unknown version"} cannot hold a replicated event log: its stream replicas diverge when a node is ` +
    `killed or paused under writes, and read models then skip events. Use nats-server ${major}.${minor} or later ` +
    "(bash scripts/setup-system.sh nats installs Debian trixie's), or one node (NATS_REPLICAS=1)."
  );
}
