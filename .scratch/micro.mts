import { HttpServer, json } from "/work/main/gateway/http.ts";
import { Agent, request } from "undici";
import { PassThrough } from "node:stream";
const srv = new HttpServer({ corsOrigins: [] });
srv.route("post", "/sink", async (req) => { let n = 0; for await (const c of req.bodyStream!) n += c.length; return json(200, { n }); }, { bodyMode: "stream", bodyLimit: 1 << 30 });
const port = await srv.listen("127.0.0.1", 0);
const fwd = new HttpServer({ corsOrigins: [] });
const fagent = new Agent({ connections: 64 });
fwd.route("post", "/fwd", async (req) => {
  const p = new PassThrough({ highWaterMark: 1 << 20 });
  const up = request(`http://127.0.0.1:${port}/sink`, { method: "POST", body: p, dispatcher: fagent }).then((r) => r.body.json());
  for await (const c of req.bodyStream!) { if (!p.write(c)) await new Promise((r) => p.once("drain", r)); }
  p.end();
  return json(200, await up);
}, { bodyMode: "stream", bodyLimit: 1 << 30 });
const fport = await fwd.listen("127.0.0.1", 0);
const agent = new Agent({ connections: 16 });
const payload = Buffer.alloc(1 << 20, 1);
for (const [name, url] of [["sink", `http://127.0.0.1:${port}/sink`], ["fwd", `http://127.0.0.1:${fport}/fwd`]]) {
  for (const conc of [1, 4]) {
    const t0 = performance.now(); let n = 0;
    await Promise.all(Array.from({ length: conc }, async () => { for (let i = 0; i < 40; i++) { const r = await request(url, { method: "POST", body: payload, dispatcher: agent }); await r.body.dump(); n++; } }));
    console.log(name, conc, "MiB/s", (n / ((performance.now() - t0) / 1000)).toFixed(0));
  }
}
process.exit(0);
