// Are the npm dependencies of package-lock.json installed, and `npm ci` with visible progress when they are not.
// Plain JavaScript with no dependencies: `npm start` on a fresh clone runs this before node_modules exists, and
// scripts/setup-system.sh (what .ci/run uses) runs it as `node scripts/npm-dependencies.mjs`.
import { spawn } from "node:child_process";
import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = resolve(fileURLToPath(new URL("..", import.meta.url)));

/**
 * Why the installed tree (npm's own record of it, node_modules/.package-lock.json) does not match the lockfile, or
 * undefined when it does. Contents are compared, not modification times: a checkout rewrites package-lock.json's
 * time without changing it. A package npm may leave out (optional: other platforms' binaries) may be missing; any
 * package present must have the locked version.
 */
export function lockMismatch(lock, installed) {
  const want = lock.packages ?? {};
  const have = installed.packages ?? {};
  for (const [path, entry] of Object.entries(want)) {
    if (path === "") continue; // the project itself
    const got = have[path];
    const name = path.replace(/^.*node_modules\//, "");
    if (!got) {
      if (entry.optional) continue;
      return `${name} ${entry.version} is not installed`;
    }
    if (got.version !== entry.version) return `${name} is ${got.version}, package-lock.json wants ${entry.version}`;
  }
  return undefined;
}

/**
 * { current: true } when node_modules matches package-lock.json; else { current: false, reason }. A checkout
 * without package-lock.json (an installed package) has its dependencies managed by whoever installed it. npm writes
 * its record after the lockfile it installed from, so a record no older than the lockfile is taken as current
 * without reading either (parsing both costs 5-20 ms on every start).
 */
export function npmDependenciesState(root = repoRoot) {
  const lockPath = join(root, "package-lock.json");
  if (!existsSync(lockPath)) return { current: true };
  if (!existsSync(join(root, "node_modules"))) return { current: false, reason: "node_modules is missing" };
  const installedPath = join(root, "node_modules", ".package-lock.json");
  if (!existsSync(installedPath)) return { current: false, reason: "node_modules was not installed by npm from package-lock.json" };
  if (statSync(installedPath).mtimeMs >= statSync(lockPath).mtimeMs) return { current: true };
  const mismatch = lockMismatch(JSON.parse(readFileSync(lockPath, "utf8")), JSON.parse(readFileSync(installedPath, "utf8")));
  return mismatch ? { current: false, reason: `node_modules is out of date (${mismatch})` } : { current: true };
}

/** node_modules that is a link to a folder elsewhere (shared by several checkouts), else undefined. */
export function linkedNodeModules(root = repoRoot) {
  const path = join(root, "node_modules");
  return existsSync(path) && lstatSync(path).isSymbolicLink() ? realpathSync(path) : undefined;
}

/**
 * How far an `npm ci` has got: npm makes every top-level package's folder (scoped ones counted one by one) first,
 * then extracts each; a package.json in it means extracted. Install scripts (native builds) run after that.
 */
function extraction(root) {
  const dir = join(root, "node_modules");
  const folders = [];
  if (existsSync(dir)) {
    for (const entry of readdirSync(dir)) {
      if (entry.startsWith(".")) continue;
      if (entry.startsWith("@")) for (const name of readdirSync(join(dir, entry))) folders.push(join(dir, entry, name));
      else folders.push(join(dir, entry));
    }
  }
  return { packages: folders.length, extracted: folders.filter((f) => existsSync(join(f, "package.json"))).length };
}

/** What npm ci is doing, without the time: a line is repeated only when this changes or every 30 s. */
function progressState(root) {
  const { packages, extracted } = extraction(root);
  if (!packages) return "resolving the packages";
  if (extracted < packages) return `${extracted} of ${packages} packages extracted`;
  // native builds (better-sqlite3 from source, minutes on 2 cores) print nothing while they run
  return `all ${packages} packages extracted, running their install scripts`;
}

/**
 * Runs `npm ci` in root with its output shown, and a line saying how far it has got whenever that changes (looked
 * at every 5 s) or every 30 s.
 * Resolves the exit status (0: installed).
 */
export function installNpmDependencies(root = repoRoot, log = (line) => console.error(line)) {
  const started = Date.now();
  log("memrelay: installing the npm dependencies (npm ci)…");
  // Inside `npm start`, npm_execpath is the npm that runs us: use the same one.
  const [cmd, args] = process.env.npm_execpath ? [process.execPath, [process.env.npm_execpath]] : ["npm", []];
  const child = spawn(cmd, [...args, "ci", "--no-audit", "--no-fund"], {
    cwd: root,
    stdio: "inherit",
    // onnxruntime-node would download a prebuilt binary at install time; nothing here uses it.
    env: { ...process.env, ONNXRUNTIME_NODE_INSTALL: "skip" },
  });
  const seconds = () => Math.round((Date.now() - started) / 1000);
  let shown = { state: "", at: 0 };
  const ticker = setInterval(() => {
    const state = progressState(root);
    if (state === shown.state && Date.now() - shown.at < 30_000) return;
    shown = { state, at: Date.now() };
    log(`memrelay: npm ci: ${state} (${seconds()} s)`);
  }, 5_000);
  return new Promise((res) => {
    const done = (code, why) => {
      clearInterval(ticker);
      log(code === 0 ? `memrelay: npm dependencies installed in ${seconds()} s` : `memrelay: npm ci failed (${why}); fix what it printed above, then run it again`);
      res(code);
    };
    child.once("error", (err) => done(1, `${err.message}: is npm on the PATH?`));
    child.once("exit", (code, signal) => done(code ?? 1, signal ? `stopped by ${signal}` : `exit status ${code}`));
  });
}

/** Installs the dependencies when they do not match the lockfile; resolves the exit status. */
export async function ensureNpmDependencies(root = repoRoot) {
  const state = npmDependenciesState(root);
  if (state.current) return 0;
  const link = linkedNodeModules(root);
  if (link) {
    // npm ci would empty a folder other checkouts use: say what is wrong and leave it to whoever owns it.
    console.error(`memrelay: ${state.reason}; node_modules links to ${link}, which this command does not reinstall: run npm ci there`);
    return 0;
  }
  console.error(`memrelay: ${state.reason}`);
  return installNpmDependencies(root);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await ensureNpmDependencies();
}
