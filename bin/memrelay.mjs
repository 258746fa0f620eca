#!/usr/bin/env node
// Entry point of the `memrelay` command: installs what is missing (npm dependencies, and nats-server for `start`),
// then runs the TypeScript CLI through tsx's loader (no build step). Only dependency-free modules are imported
// statically: on a fresh clone, tsx is not installed until the prerequisites are.
import { ensurePrerequisites } from "../scripts/prerequisites.mjs";

const args = process.argv.slice(2);
const ready = await ensurePrerequisites(args);
if (ready !== 0) process.exit(ready);
const { register } = await import("tsx/esm/api");
register();
// A reader that goes away (`memrelay lag | head`) only ends the output: the command finishes its work (a running
// `memrelay start` still stops what it started) instead of dying on an unhandled EPIPE.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err) => {
    if (err.code !== "EPIPE") throw err;
  });
}
const { main } = await import("../cli/main.ts");
const code = await main(args);
process.exitCode = code;
// A finished command exits even if something it started left a handle open (a socket, a timer, an effect wedged on a
// service that never answers): `memrelay start` must not linger without its services after a failed step, nor keep
// retrying after a stop (issue 28).
setTimeout(() => process.exit(code), 1_000).unref();
