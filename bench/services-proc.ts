// The benchmark's services process (forked by bench/lib/processes.ts): startLocalStack without relayer roles, i.e.
// the local chain and its JSON-RPC, the t-of-n key servers and the blob storage service. The gateway, actor host
// and projections run as separate `memrelay worker` processes joining it through `workerEnv`.
// Protocol over the IPC channel: -> {type:"ready", workerEnv, blobstoreUrl}; <- {type:"call", id, cmd:"identity"};
// <- {type:"stop"}.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../config/env.ts";
import { createLogger, silentLogger } from "../config/logger.ts";
import { startLocalStack } from "../runtime/local-stack.ts";

const send = (m: unknown) => process.send?.(m);

const dataDir = mkdtempSync(join(tmpdir(), "memrelay-bench-services-"));
const env = process.env;
const config = loadConfig({ ...env, PORT: "0", BLOBSTORE_PORT: "0", CONSOLE_PORT: "0", MEMRELAY_DATA_DIR: dataDir });
const logger = env.MEMRELAY_BENCH_LOGS ? createLogger({ format: "json" }) : silentLogger;
const stack = await startLocalStack({
  config,
  logger,
  databaseUrl: env.DATABASE_URL!,
  roles: { gateway: false, actors: false, projections: false },
});

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await stack.stop().catch(() => undefined);
  rmSync(dataDir, { recursive: true, force: true });
  process.exit(0);
};

process.on("message", async (m: any) => {
  if (m?.type === "stop") return stop();
  if (m?.type !== "call") return;
  try {
    if (m.cmd === "identity") {
      const id = await stack.createIdentity(m.arg ?? "memrelay-bench");
      send({
        type: "reply",
        id: m.id,
        value: {
          owner: id.owner,
          accountId: id.accountId,
          delegateSecretKeyHex: Buffer.from(id.delegateSecretKey).toString("hex"),
          delegatePublicKeyHex: id.delegatePublicKeyHex,
          delegateAddress: id.delegateAddress,
        },
      });
    } else send({ type: "reply", id: m.id, error: `unknown command ${m.cmd}` });
  } catch (err) {
    send({ type: "reply", id: m.id, error: err instanceof Error ? err.message : String(err) });
  }
});
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.on("disconnect", stop);

send({ type: "ready", workerEnv: stack.workerEnv, blobstoreUrl: stack.blobstoreUrl, embedderDims: stack.embedder.dims });
