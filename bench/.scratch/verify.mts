import { createPublicKey, generateKeyPairSync, sign, verify, webcrypto, randomUUID } from "node:crypto";
import { ed25519 } from "@noble/curves/ed25519.js";
const { publicKey, privateKey } = generateKeyPairSync("ed25519");
const msg = Buffer.from(`1700000000.POST./api/remember.${"a".repeat(64)}.${randomUUID()}.0xabc`);
const sig = sign(null, msg, privateKey);
const raw = publicKey.export({ format: "der", type: "spki" }).subarray(12);
const N = 5000;
let t = performance.now();
for (let i = 0; i < N; i++) verify(null, msg, publicKey, sig);
console.log("node crypto.verify", ((performance.now() - t) / N * 1000).toFixed(1), "µs");
t = performance.now();
for (let i = 0; i < 1000; i++) ed25519.verify(sig, msg, raw);
console.log("noble/curves verify", ((performance.now() - t) / 1000 * 1000).toFixed(1), "µs");
const k = await webcrypto.subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"]);
t = performance.now();
await Promise.all(Array.from({ length: N }, () => webcrypto.subtle.verify({ name: "Ed25519" }, k, sig, msg)));
console.log("subtle verify (parallel, wall)", ((performance.now() - t) / N * 1000).toFixed(1), "µs");
const c0 = process.cpuUsage();
t = performance.now();
for (let i = 0; i < N; i++) new Error("x");
console.log("new Error", ((performance.now() - t) / N * 1000).toFixed(2), "µs");
class E extends Error { constructor(m?: string) { super(m); this.name = "E"; } }
async function deep(n: number): Promise<void> { if (n) return deep(n - 1); for (let i = 0; i < N; i++) new E(); }
t = performance.now(); await deep(30);
console.log("new Error subclass deep stack", ((performance.now() - t) / N * 1000).toFixed(2), "µs");
