// `memrelay worker --roles …` as a child process joining a test stack (its workerEnv), resolved once it prints ready.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

const bin = fileURLToPath(new URL("../../bin/memrelay.mjs", import.meta.url));

/** The worker, with the port it serves on (from its `ready port=N` line; PORT=0 lets it pick a free one itself). */
export type WorkerProcess = ChildProcess & { readonly port?: number };

export function startWorkerProcess(env: Record<string, string>, roles: string, extra: Record<string, string> = {}): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [bin, "worker", "--roles", roles], { env: { ...process.env, ...env, PORT: "0", LOG_FORMAT: "json", ...extra }, stdio: ["ignore", "pipe", "pipe"] });
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`worker did not start: ${out}`)), 60_000);
    child.stdout!.on("data", (d) => {
      out += d;
      if (out.includes("ready")) {
        clearTimeout(timer);
        const port = /ready port=(\d+)/.exec(out)?.[1];
        resolve(Object.assign(child, port ? { port: Number(port) } : {}));
      }
    });
    child.stderr!.on("data", (d) => (out = (out + d).slice(-4000)));
    child.once("exit", (code) => reject(new Error(`worker exited with ${code}: ${out}`)));
  });
}
