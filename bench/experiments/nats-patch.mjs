// Experiment only (preloaded into worker processes with --import): emulates two candidate fixes without touching
// the repo: MR_NO_ASYNC_TRACES=1 → noAsyncTraces; MR_IMMEDIATE_FLUSH=1 → coalesce NATS socket writes per event-loop turn.
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
const require = createRequire(import.meta.url);
// The same CommonJS files the client loads (lib/mod.js sits next to them).
const lib = dirname(require.resolve("@nats-io/nats-core"));
const proto = require(join(lib, "protocol.js"));
const PH = proto.ProtocolHandler;
if (process.env.MR_NO_ASYNC_TRACES === "1") {
  const nats = require(join(lib, "nats.js"));
  const orig = nats.NatsConnectionImpl.prototype.request;
  nats.NatsConnectionImpl.prototype.request = function (...a) {
    this.protocol.options.noAsyncTraces = true;
    return orig.apply(this, a);
  };
  const origPub = PH.prototype.publish;
  PH.prototype.publish = function (...a) {
    this.options.noAsyncTraces = true;
    return origPub.apply(this, a);
  };
}
if (process.env.MR_IMMEDIATE_FLUSH === "1") {
  PH.prototype.sendCommand = function (cmd, ...payloads) {
    const len = this.outbound.length();
    const buf = typeof cmd === "string" ? new TextEncoder().encode(cmd) : cmd;
    this.outbound.fill(buf, ...payloads);
    if (len === 0) setImmediate(() => this.flushPending());
    else if (this.outbound.size() >= this.pendingLimit) this.flushPending();
  };
}
