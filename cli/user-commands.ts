// `memrelay remember|recall|status`: the relayer from a terminal, with the credential file written by `start`
// (or by the tool package's login).
import { RelayerError, type MemrelayClient } from "../client/memrelay-client.ts";
import { clientFromCredentials, NoCredentialsError } from "../client/from-credentials.ts";

export const USER_HELP = `memrelay remember <text> [--namespace NS] [--wait]
  Stores <text> as an encrypted memory; prints the job id (with --wait, polls until done or failed).
memrelay status <job_id>...
  Prints the status of remember jobs.
memrelay recall <query> [--namespace NS] [--limit N]
  Recalls memories by meaning (decrypted with a fresh session key of your delegate key).

Options: --relayer URL (default: MEMORY_SERVER_URL, else the relayer of the running \`memrelay start\` of the data
directory, else the credential file's relayerUrl).
Credentials: ${"~/.memory/credentials.json"} (MEMORY_CREDENTIALS_FILE overrides), written by \`memrelay start\`.`;

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

function positional(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i].startsWith("--")) {
      if (!["--wait"].includes(args[i])) i++;
      continue;
    }
    out.push(args[i]);
  }
  return out;
}

export async function userCommand(cmd: "remember" | "recall" | "status", args: string[], env = process.env): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(USER_HELP);
    return 0;
  }
  let client: MemrelayClient;
  try {
    client = clientFromCredentials({ relayer: flag(args, "--relayer"), env });
  } catch (err) {
    if (!(err instanceof NoCredentialsError)) throw err;
    console.error(err.message);
    return 2;
  }
  const namespace = flag(args, "--namespace") ?? env.MEMORY_NAMESPACE;
  const words = positional(args);
  try {
    if (cmd === "remember") {
      if (!words.length) throw new Error("remember needs the text to store");
      const r = await client.remember(words.join(" "), namespace);
      if (args.includes("--wait")) console.log(JSON.stringify(await client.waitForJob(r.job_id)));
      else console.log(JSON.stringify(r));
    } else if (cmd === "status") {
      if (!words.length) throw new Error("status needs at least one job id");
      console.log(JSON.stringify(words.length === 1 ? await client.job(words[0]) : await client.bulkStatus(words), null, 2));
    } else {
      if (!words.length) throw new Error("recall needs a query");
      const limit = flag(args, "--limit");
      const r = await client.recall(words.join(" "), { namespace, ...(limit ? { limit: Number(limit) } : {}) });
      for (const m of r.results) console.log(`${m.distance.toFixed(3)}  ${m.text}`);
      if (r.dropped_count) console.error(`${r.dropped_count} match(es) could not be fetched or decrypted`);
      if (!r.results.length) console.error("no memories matched");
    }
    return 0;
  } catch (err) {
    console.error(err instanceof RelayerError ? err.message : `error: ${(err as Error).message}`);
    return 1;
  }
}
