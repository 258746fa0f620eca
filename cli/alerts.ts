// `memrelay alerts tail`: prints the ALERTS stream as JSON lines, from an ephemeral consumer or a durable one.
import { AckPolicy, DeliverPolicy, type ConsumerMessages } from "@nats-io/jetstream";
import { openEventLog } from "../eventlog/connection.ts";
import { STREAMS, SUBJECTS } from "../eventlog/subjects.ts";
import { loadConfig } from "../config/env.ts";
import { ALERT_SUBJECTS } from "../schemas/alerts.ts";

export const ALERTS_HELP = `memrelay alerts tail [--durable NAME] [--subject SUBJECT]... [--all | --since WHEN] [--count N]
  Prints operator alerts from the ALERTS stream (NATS_URL), one JSON alert envelope per line, until Ctrl-C
  (or until N alerts with --count).
  Subjects: ${ALERT_SUBJECTS.uploadFailed}, ${ALERT_SUBJECTS.walletLowBalance} (default: every alert, ${SUBJECTS.alerts}).
  Repeat --subject for several (needs nats-server 2.10+).
  --durable NAME  use (and on first use create) a durable consumer NAME: each alert is acknowledged after it is
                  printed, so a restarted tail resumes after the last alert it printed.
  --all           start at the oldest stored alert (the stream keeps 30 days); default: new alerts only.
  --since WHEN    start at a time: an RFC 3339 timestamp or a duration ago such as 90s, 15m, 2h, 7d.
  For a durable consumer, --all and --since apply when it is created.`;

function flagValues(args: string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) if (args[i] === name && args[i + 1] !== undefined) out.push(args[++i]);
  return out;
}

export function parseSince(raw: string, now = Date.now()): Date | null {
  const m = /^(\d+)(s|m|h|d)$/.exec(raw.trim());
  if (m) return new Date(now - Number(m[1]) * { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as "s" | "m" | "h" | "d"]);
  const t = Date.parse(raw);
  return Number.isFinite(t) ? new Date(t) : null;
}

export async function alertsCommand(args: string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || sub === "--help" || sub === "-h" || rest.includes("--help") || rest.includes("-h")) {
    console.log(ALERTS_HELP);
    return sub ? 0 : 2;
  }
  if (sub !== "tail") {
    console.error(`unknown alerts command: ${sub}\n\n${ALERTS_HELP}`);
    return 2;
  }
  const durable = flagValues(rest, "--durable")[0];
  const subjects = flagValues(rest, "--subject");
  const filters = subjects.length ? subjects : [SUBJECTS.alerts];
  if (filters.some((s) => !/^alerts(\.[A-Za-z0-9_*>-]+)*$/.test(s) && s !== SUBJECTS.alerts)) {
    console.error(`--subject must be an alerts subject such as ${ALERT_SUBJECTS.uploadFailed} or ${SUBJECTS.alerts}`);
    return 2;
  }
  const countRaw = flagValues(rest, "--count")[0];
  const count = countRaw === undefined ? Infinity : Number(countRaw);
  if (!(count === Infinity || (Number.isInteger(count) && count > 0))) {
    console.error("--count must be a positive integer");
    return 2;
  }
  const sinceRaw = flagValues(rest, "--since")[0];
  const since = sinceRaw === undefined ? null : parseSince(sinceRaw);
  if (sinceRaw !== undefined && !since) {
    console.error("--since takes an RFC 3339 timestamp or a duration such as 15m, 2h, 7d");
    return 2;
  }
  const start = rest.includes("--all")
    ? { deliver_policy: DeliverPolicy.All }
    : since
      ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: since.toISOString() }
      : { deliver_policy: DeliverPolicy.New };
  const filter = filters.length === 1 ? { filter_subject: filters[0] } : { filter_subjects: filters };

  const config = loadConfig(env);
  const log = await openEventLog({ servers: config.natsUrl, name: "memrelay-alerts-tail" });
  let stopped = false;
  let wake: () => void = () => undefined;
  const interrupted = new Promise<null>((resolve) => (wake = () => resolve(null)));
  let messages: ConsumerMessages | undefined;
  const stop = () => {
    stopped = true;
    wake();
    messages?.stop();
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  const print = (data: Uint8Array) => process.stdout.write(new TextDecoder().decode(data).trim() + "\n");
  let printed = 0;
  try {
    if (durable) {
      try {
        await log.jsm.consumers.info(STREAMS.alerts, durable);
      } catch {
        await log.jsm.consumers.add(STREAMS.alerts, { durable_name: durable, ack_policy: AckPolicy.Explicit, ...filter, ...start });
      }
      const consumer = await log.js.consumers.get(STREAMS.alerts, durable);
      // One alert per pull, acknowledged once printed: nothing is left delivered-but-unacknowledged on exit, so
      // the next tail with this name resumes at once, after the last printed alert.
      while (!stopped && printed < count) {
        const m = await Promise.race([consumer.next({ expires: 5_000 }), interrupted]);
        if (!m) continue;
        print(m.data);
        await m.ackAck().catch(() => m.ack());
        printed++;
      }
      return 0;
    }
    // A single subject as a string: pre-2.10 servers take only `filter_subject`.
    const consumer = await log.js.consumers.get(STREAMS.alerts, { filter_subjects: filters.length === 1 ? filters[0] : filters, ...start });
    messages = await consumer.consume({ max_messages: 64 });
    if (stopped) messages.stop();
    for await (const m of messages) {
      print(m.data);
      if (++printed >= count) break;
    }
    return 0;
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    messages?.stop();
    await log.close();
  }
}
