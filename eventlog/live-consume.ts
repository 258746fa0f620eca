// Pull options of the consumers that follow the log without end (projections, actor hosts). nats.js defaults a
// consume() to 30 s pull requests with a 15 s idle heartbeat, and only notices a consumer that went with a NATS node
// after two missed heartbeats, then waits `expires` between retries: in a cluster a node killed or paused stalled
// such a follower for 30–60 s while the rest of the cluster served (issue 32: the blob store's read model fell that far
// behind, so blobs it had stored answered 404 and recall dropped done memories). Short pulls with a 1 s heartbeat
// find a lost consumer within about 2 s; idle, that costs one heartbeat a second per consumer.
export const LIVE_CONSUME = { expires: 5_000, idle_heartbeat: 1_000 } as const;
