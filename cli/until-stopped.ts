// How a serving command (`memrelay start`, `memrelay worker`) ends: Ctrl-C or SIGTERM, or a role giving up (the
// sidecar watchdog). Stopping is bounded whatever is in flight (issue 28: a wedged start ignored SIGTERM for minutes):
// the roles get ROLES_STOP_MS, then what was started under them (nats-server, embedded Postgres) is stopped and the
// command returns. A command still in flight was handed back unacknowledged and is redelivered (actors/host.ts).
// Signals are taken from the moment `untilStopped()` is called, so one that arrives while the stack is still starting
// stops it once started instead of killing the process with its services left running. A second signal exits at
// once, unless it comes within REPEAT_MS of the first: Ctrl-C on `npm start` delivers SIGINT twice (from the terminal
// and forwarded by npm, which execs node), and that pair must not cut the stop short.

import { settlesWithin } from "../config/time-bounds.ts";

/** The roles' share of a stop; with nats-server's own bounded stop (cli/services.ts) the whole stays under 10 s. */
export const ROLES_STOP_MS = 5_000;

/** Runs `stop`, waiting at most `ms` for it; false when it was still running then (it goes on in the background). */
export function stopWithin(ms: number, stop: () => Promise<void>): Promise<boolean> {
  return settlesWithin(ms, stop().catch(() => undefined));
}

/** How close a second signal may follow the first and still count as the same one (npm's forwarded Ctrl-C). */
const REPEAT_MS = 1_000;

export function untilStopped() {
  let lost = false;
  let stop: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  let firstSignalAt: number | undefined;
  const onSignal = () => {
    if (firstSignalAt !== undefined && Date.now() - firstSignalAt > REPEAT_MS) process.exit(130);
    firstSignalAt ??= Date.now();
    stop();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return {
    /** A role gave up (the sidecar watchdog): stop everything, with a failure status as the spec says. */
    onLost: () => {
      lost = true;
      stop();
    },
    /** Waits for a signal (or `onLost`), then stops the roles (bounded) and what runs under them; the exit status. */
    async wait(stopRoles: () => Promise<void>, stopUnder: () => Promise<void> = async () => undefined): Promise<number> {
      await stopped;
      console.log(lost ? "the MCP sidecar stopped answering; stopping everything" : "stopping…");
      if (!(await stopWithin(ROLES_STOP_MS, stopRoles))) console.log(`stopping took longer than ${ROLES_STOP_MS / 1000} s; exiting anyway (commands in flight are redelivered)`);
      await stopUnder();
      return lost ? 1 : 0;
    },
  };
}
