// The `memrelay` command: one entry point with a subcommand for everything an operator or a user does.
// Each command's module is loaded when it runs: `start` and `worker` load the whole stack, which an operator command
// such as `replay` should not wait for (it was seconds of every replay).
import { ConfigError } from "../config/env.ts";
import { operatorEnv } from "./stack-file.ts";

const HELP = `memrelay <command> [options]

Commands:
  start [--cluster]           run everything locally (nats-server, Postgres, chain, key servers, blob store, relayer);
                              --cluster: three JetStream nodes (R3), two gateways, two actor hosts
  remember <text>             store a memory            (memrelay remember --help)
  recall <query>              recall memories by meaning
  status <job_id>...          remember job status
  replay [projection|all]     rebuild read models from the event log, with a progress bar
  restore --owner A --namespace N  rebuild a namespace's index from chain blobs when the log is gone (progress bar)
  lag                         each projection's checkpoint and lag
  worker --roles ...          run relayer roles (gateway, actors, projections) against running services
  blobstore admin-key ...     blob store operator commands (issue, revoke, list admin keys)
  console ...                 developer console operator commands (sign up, team spaces, members, API keys)
  alerts tail [--durable N]   print operator alerts (upload failures, low balances) as JSON lines

Every command takes --help.`;

type Handler = (args: string[]) => Promise<number>;

// Operator commands find a running `memrelay start` through its stack file when NATS_URL/DATABASE_URL are unset.
const ops = () => operatorEnv(process.env);
const commands: Record<string, Handler> = {
  start: async (a) => (await import("./start.ts")).startCommand(a),
  remember: async (a) => (await import("./user-commands.ts")).userCommand("remember", a),
  recall: async (a) => (await import("./user-commands.ts")).userCommand("recall", a),
  status: async (a) => (await import("./user-commands.ts")).userCommand("status", a),
  replay: async (a) => (await import("./projections.ts")).projectionsCommand("replay", a, ops()),
  restore: async (a) => (await import("./restore.ts")).restoreCommand(a, ops()),
  lag: async (a) => (await import("./projections.ts")).projectionsCommand("lag", a, ops()),
  worker: async (a) => (await import("./worker.ts")).workerCommand(a),
  blobstore: async (a) => (await import("./blobstore.ts")).blobstoreCommand(a, ops()),
  console: async (a) => (await import("./console.ts")).consoleCommand(a, ops()),
  alerts: async (a) => (await import("./alerts.ts")).alertsCommand(a, ops()),
};

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === "--help" || cmd === "-h" || cmd === "help") {
    console.log(cmd === "help" && rest[0] ? await helpFor(rest[0]) : HELP);
    return 0;
  }
  const handler = commands[cmd];
  if (!handler) {
    console.error(`unknown command: ${cmd}\n\n${HELP}`);
    return 2;
  }
  try {
    return await handler(rest);
  } catch (err) {
    // a malformed operator variable: its message says which and what it accepts
    if (err instanceof ConfigError) {
      console.error(`memrelay ${cmd}: ${err.message}`);
      return 2;
    }
    throw err;
  }
}

async function helpFor(cmd: string): Promise<string> {
  if (cmd === "start") return (await import("./start.ts")).START_HELP;
  if (cmd === "replay" || cmd === "lag") return (await import("./projections.ts")).REPLAY_HELP;
  if (cmd === "worker") return (await import("./worker.ts")).WORKER_HELP;
  if (["remember", "recall", "status"].includes(cmd)) return (await import("./user-commands.ts")).USER_HELP;
  return HELP;
}
