// Recognises failures of a backing service (NATS, Postgres, a port's remote) as opposed to bugs, so gateways
// answer 503 with Retry-After while a dependency is down and recover by themselves when it returns.
import { isJetStreamUnavailable } from "../eventlog/jetstream-errors.ts";
import { EventLogOutage } from "../eventlog/outage.ts";

const NET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTCONN", "EAI_AGAIN"]);
// SQLSTATE classes: 08 connection exception, 53 insufficient resources, 57P0x operator intervention (shutdown).
const SQLSTATE_UNAVAILABLE = /^(08|53|57P0)/;
const MESSAGES = /connection terminated|connection (?:error|closed)|timeout exceeded when trying to connect|client has encountered a connection error|the database system is|CONNECTION_CLOSED|CONNECTION_DRAINING|DISCONNECT|no responders|TIMEOUT|timed out|closed connection/i;

export function isUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== "object" || depth > 3) return false;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown; _tag?: unknown; kind?: unknown };
  if (e._tag === "PortError") return e.kind === "unavailable";
  if (err instanceof EventLogOutage) return true;
  // JetStream's transient cluster states, told apart by nats.js's classes and the server's codes.
  if (isJetStreamUnavailable(err)) return true;
  if (typeof e.code === "string" && (NET_CODES.has(e.code) || SQLSTATE_UNAVAILABLE.test(e.code))) return true;
  if (typeof e.message === "string" && MESSAGES.test(e.message)) return true;
  return isUnavailable(e.cause, depth + 1);
}
