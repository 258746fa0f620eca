// A second listener on a port another memrelay process already serves must fail and name the port, not share it:
// uWebSockets.js binds with SO_REUSEPORT unless told otherwise, so two stacks on one machine would split each other's
// traffic between their gateways without a word.
import { afterEach, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { HttpServer } from "../gateway/http.ts";
import { freePort } from "../runtime/tcp-ports.ts";

const servers: HttpServer[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
  for (const c of children.splice(0)) c.kill("SIGKILL");
});

function server(): HttpServer {
  const s = new HttpServer({ corsOrigins: [] }).fallback();
  servers.push(s);
  return s;
}

describe("HttpServer.listen", () => {
  it("refuses a port another listener in this process holds", async () => {
    const port = await server().listen("127.0.0.1", await freePort());
    await expect(server().listen("127.0.0.1", port)).rejects.toThrow(`cannot listen on 127.0.0.1:${port}`);
  });

  it("refuses a port a uWebSockets.js listener in another process holds", async () => {
    const wanted = await freePort();
    const holder = spawn(process.execPath, ["-e", `
      const uws = require("uWebSockets.js");
      uws.App().listen("127.0.0.1", ${wanted}, (s) => { console.log(s ? uws.us_socket_local_port(s) : 0); });
    `], { stdio: ["ignore", "pipe", "inherit"] });
    children.push(holder);
    const [line] = (await once(holder.stdout!, "data")) as [Buffer];
    const port = Number(line.toString().trim());
    expect(port).toBeGreaterThan(0);
    await expect(server().listen("127.0.0.1", port)).rejects.toThrow(`cannot listen on 127.0.0.1:${port}`);
  });
});
