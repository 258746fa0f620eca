// The stdio tool package's command line (spec/relayer.md, Tool package command line): flags win over their
// variables; presets set both URLs; explicit --relayer / --web-url override a preset.
export const PRESETS: Readonly<Record<"prod" | "staging" | "local", { relayer: string; web: string }>> = {
  prod: { relayer: "https://relayer.memrelay.dev", web: "https://memrelay.dev" },
  staging: { relayer: "https://relayer.staging.memrelay.dev", web: "https://staging.memrelay.dev" },
  local: { relayer: "http://127.0.0.1:8000", web: "http://127.0.0.1:5173" },
};

export const DEFAULT_LABEL = "memrelay MCP";

export interface PackageOptions {
  readonly mode: "serve" | "login" | "logout" | "help";
  /** Relayer from the flag, the variable or a preset; undefined: the credential file's, else the prod preset. */
  readonly relayerUrl?: string;
  readonly webUrl?: string;
  readonly label: string;
  /** Default namespace for calls that omit one: --namespace, else MEMORY_NAMESPACE, else none. */
  readonly namespace?: string;
  readonly debug: boolean;
  /** MEMORY_MCP_SSE_IDLE_MS: an unused connection to the relayer is closed after this long (default 30 s, < 500 ignored). */
  readonly idleMs: number;
  /** MEMORY_MCP_CALL_TIMEOUT_MS: longest a forwarded tool call may take (default 240 s, < 1000 ignored). */
  readonly callTimeoutMs: number;
}

export class UsageError extends Error {}

const atLeast = (raw: string | undefined, min: number, def: number) => {
  const n = Number(raw);
  return raw !== undefined && Number.isInteger(n) && n >= min ? n : def;
};

export function parseOptions(argv: readonly string[], env: Record<string, string | undefined>): PackageOptions {
  const flags: { relayer?: string; web?: string; label?: string; namespace?: string; preset?: keyof typeof PRESETS } = {};
  let mode: PackageOptions["mode"] = "serve";
  for (let i = 0; i < argv.length; i++) {
    const [name, inline] = argv[i].includes("=") ? [argv[i].slice(0, argv[i].indexOf("=")), argv[i].slice(argv[i].indexOf("=") + 1)] : [argv[i], undefined];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === "") throw new UsageError(`${name} needs a value`);
      return v;
    };
    switch (name) {
      case "--help": case "-h": mode = "help"; break;
      case "--logout": mode = "logout"; break;
      case "--login": case "login": mode = "login"; break;
      case "--prod": case "--staging": case "--local": flags.preset = name.slice(2) as keyof typeof PRESETS; break;
      case "--relayer": flags.relayer = value(); break;
      case "--web-url": flags.web = value(); break;
      case "--label": flags.label = value(); break;
      case "--namespace": case "--ns": flags.namespace = value(); break;
      default: throw new UsageError(`unknown argument ${argv[i]} (see --help)`);
    }
  }
  const preset = flags.preset ? PRESETS[flags.preset] : undefined;
  const url = (v: string | undefined, what: string) => {
    if (v === undefined) return undefined;
    try {
      return new URL(v).toString().replace(/\/+$/, "");
    } catch {
      throw new UsageError(`${what} is not a URL: ${v}`);
    }
  };
  return {
    mode,
    relayerUrl: url(flags.relayer ?? env.MEMORY_SERVER_URL ?? preset?.relayer, "--relayer"),
    webUrl: url(flags.web ?? env.MEMORY_WEB_URL ?? preset?.web, "--web-url"),
    label: flags.label ?? env.MEMORY_CLIENT_LABEL ?? DEFAULT_LABEL,
    namespace: flags.namespace ?? (env.MEMORY_NAMESPACE || undefined),
    debug: env.MEMORY_MCP_DEBUG === "1",
    idleMs: atLeast(env.MEMORY_MCP_SSE_IDLE_MS, 500, 30_000),
    callTimeoutMs: atLeast(env.MEMORY_MCP_CALL_TIMEOUT_MS, 1000, 240_000),
  };
}

export const USAGE = `memrelay-mcp — memory tools for agent hosts over stdio

Usage: memrelay-mcp [login] [--relayer <url>] [--web-url <url>] [--label <text>] [--namespace <name>]
                    [--prod | --staging | --local] [--login] [--logout] [--help]

  --relayer <url>      relayer base URL (MEMORY_SERVER_URL; default: the credential file's, else --prod's)
  --web-url <url>      dashboard used for sign-in (MEMORY_WEB_URL)
  --label <text>       name of this agent's delegate key in the dashboard (MEMORY_CLIENT_LABEL; "${DEFAULT_LABEL}")
  --namespace, --ns    default namespace for calls that omit one (MEMORY_NAMESPACE)
  --prod, --staging, --local   set relayer and dashboard together (local: 127.0.0.1:8000 and :5173)
  login, --login       sign in now in the browser, save ~/.memory/credentials.json, exit
  --logout             delete ~/.memory/credentials.json and exit (the key stays on the account: revoke it in the dashboard)
  MEMORY_MCP_DEBUG=1 logs to stderr; MEMORY_MCP_SSE_IDLE_MS, MEMORY_MCP_CALL_TIMEOUT_MS tune the relayer connection.

Without credentials the server still starts: memory tools answer with how to sign in, and memory_login returns a
one-time URL (valid 5 minutes). Once approved, the tools work at once: no restart of the agent host.`;
