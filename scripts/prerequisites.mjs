// What the `memrelay` command needs before its TypeScript can load, installed when it is missing: the npm
// dependencies for every command (tsx among them), and nats-server for `memrelay start` without NATS_URL, through
// scripts/setup-system.sh (the script .ci/run uses). Plain JavaScript with no dependencies, since it runs on a fresh
// clone before node_modules exists. On a set-up machine it costs a few file stats.
import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { ensureNpmDependencies, repoRoot } from "./npm-dependencies.mjs";

// Debian installs nats-server into /usr/sbin, which is not on a non-root user's PATH.
const SYSTEM_DIRS = ["/usr/local/sbin", "/usr/sbin", "/sbin"];

function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The nats-server binary: on the PATH, else in a system directory the PATH leaves out; undefined when absent. */
export function findNatsServer(env) {
  const dirs = [...(env.PATH ?? "").split(delimiter).filter(Boolean), ...SYSTEM_DIRS];
  return dirs.map((d) => join(d, "nats-server")).find(executable);
}

/** Whether this command line starts nats-server itself (`memrelay start` without NATS_URL, not its help). */
export function startsNatsServer(args, env) {
  return args[0] === "start" && !args.includes("--help") && !args.includes("-h") && !env.NATS_URL && !env.NATS_SERVER_BIN;
}

/**
 * Installs what the command line needs; resolves 0 when it can go on, else the exit status to stop with (the
 * installer has said why). Sets NATS_SERVER_BIN in env when nats-server is found outside the PATH.
 */
export async function ensurePrerequisites(args, env = process.env) {
  const npm = await ensureNpmDependencies();
  if (npm !== 0) return npm;
  if (!startsNatsServer(args, env)) return 0;
  let nats = findNatsServer(env);
  if (!nats) {
    console.error("memrelay: nats-server is not installed; installing it with scripts/setup-system.sh nats");
    const setup = spawnSync("bash", [join(repoRoot, "scripts", "setup-system.sh"), "nats"], { stdio: "inherit", env });
    if (setup.status !== 0) return setup.status ?? 1;
    nats = findNatsServer(env);
    if (!nats) {
      console.error("memrelay: nats-server is still not found after installing it; set NATS_SERVER_BIN to its path");
      return 1;
    }
  }
  if (!(env.PATH ?? "").split(delimiter).includes(dirname(nats))) env.NATS_SERVER_BIN = nats;
  return 0;
}
