// Structured logging to stderr. LOG_FORMAT=json gives one JSON object per line; otherwise readable text.
// Callers pass ids, counts and states only: never memory text, keys or credentials.

export type LogFields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  debug(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

export function createLogger(opts: { format?: string; level?: string; base?: LogFields; sink?: (line: string) => void } = {}): Logger {
  const json = opts.format === "json";
  const debugOn = opts.level === "debug";
  const sink = opts.sink ?? ((line: string) => process.stderr.write(line + "\n"));
  const base = opts.base ?? {};
  const write = (level: string, msg: string, fields?: LogFields) => {
    if (level === "debug" && !debugOn) return;
    const all = { ...base, ...fields };
    if (json) {
      sink(JSON.stringify({ ts: new Date().toISOString(), level, msg, ...all }));
    } else {
      const kv = Object.entries(all)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => `${k}=${v}`)
        .join(" ");
      sink(`${new Date().toISOString()} ${level.toUpperCase().padEnd(5)} ${msg}${kv ? " " + kv : ""}`);
    }
  };
  return {
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
    debug: (m, f) => write("debug", m, f),
    child: (fields) => createLogger({ ...opts, base: { ...base, ...fields } }),
  };
}

export const silentLogger: Logger = createLogger({ sink: () => undefined });
