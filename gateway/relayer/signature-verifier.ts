// Ed25519 verification of signed requests, on worker threads. One verification (OpenSSL) costs 0.1–0.3 ms of CPU on
// the 2-core machine, ~40 % of the gateway's time per accepted remember: on the event loop it held the gateway to one
// core while the other idled (bench section peer, accepted remembers). Signatures that arrive in the same turn of the
// event loop travel to a worker as one message (a round trip costs more than one verification), workers take turns,
// and a worker that dies leaves its share to the event loop: nothing is lost, and no signature is ever accepted
// without a verification.
import { Worker } from "node:worker_threads";
import { SPKI_ED25519_PREFIX, verifyEd25519 } from "../../adapters/chain/sui/keys.ts";

export interface SignatureVerifier {
  /** True when `signature` (64 bytes) is `publicKey`'s (32 bytes) Ed25519 signature of `message`. */
  verify(message: Uint8Array, publicKey: Uint8Array, signature: Uint8Array): Promise<boolean>;
  close(): Promise<void>;
}

const KEY_CACHE_MAX = 10_000;

/** On the event loop: `threads: 0`, and the fallback of a pool whose workers died. */
export class InlineVerifier implements SignatureVerifier {
  verify(message: Uint8Array, publicKey: Uint8Array, signature: Uint8Array): Promise<boolean> {
    return Promise.resolve(verifyEd25519(publicKey, message, signature));
  }
  async close(): Promise<void> {}
}

/**
 * A batch on the wire: per item 32 bytes of key, 64 of signature, the message's length (u32, big-endian), the message.
 * Plain CommonJS, so that the worker needs no TypeScript loader (hence verifyEd25519's steps written again here); it
 * answers a byte per item (1: valid).
 */
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const { createPublicKey, verify } = require("node:crypto");
const PREFIX = Buffer.from("${SPKI_ED25519_PREFIX.toString("hex")}", "hex");
const keys = new Map();
parentPort.on("message", ({ id, n, data }) => {
  const b = Buffer.from(data);
  const ok = new Uint8Array(n);
  for (let i = 0, at = 0; i < n; i++) {
    const pub = b.subarray(at, at + 32), sig = b.subarray(at + 32, at + 96), len = b.readUInt32BE(at + 96);
    const msg = b.subarray(at + 100, at + 100 + len);
    at += 100 + len;
    try {
      const hex = pub.toString("hex");
      let key = keys.get(hex);
      if (!key) {
        key = createPublicKey({ key: Buffer.concat([PREFIX, pub]), format: "der", type: "spki" });
        if (keys.size >= ${KEY_CACHE_MAX}) keys.clear();
        keys.set(hex, key);
      }
      ok[i] = verify(null, msg, key, sig) ? 1 : 0;
    } catch {
      ok[i] = 0;
    }
  }
  parentPort.postMessage({ id, ok }, [ok.buffer]);
});`;

interface Item {
  readonly message: Uint8Array;
  readonly publicKey: Uint8Array;
  readonly signature: Uint8Array;
  readonly resolve: (ok: boolean) => void;
}

class VerifyWorker {
  private readonly worker: Worker;
  private readonly batches = new Map<number, Item[]>();
  private nextId = 1;
  gone = false;

  constructor(private readonly fallback: InlineVerifier) {
    this.worker = new Worker(WORKER_SOURCE, { eval: true });
    // Idle workers never keep the process alive; a batch in flight holds it through its promise's callers.
    this.worker.unref();
    this.worker.on("message", ({ id, ok }: { id: number; ok: Uint8Array }) => {
      const items = this.batches.get(id);
      this.batches.delete(id);
      items?.forEach((it, i) => it.resolve(ok[i] === 1));
    });
    const gone = () => {
      if (this.gone) return;
      this.gone = true;
      for (const items of this.batches.values()) this.verifyInline(items);
      this.batches.clear();
    };
    this.worker.on("error", gone);
    this.worker.on("exit", gone);
  }

  send(items: Item[]): void {
    if (this.gone) return this.verifyInline(items);
    let bytes = 0;
    for (const it of items) bytes += 100 + it.message.byteLength;
    const data = new Uint8Array(bytes);
    const view = new DataView(data.buffer);
    let at = 0;
    for (const it of items) {
      data.set(it.publicKey, at);
      data.set(it.signature, at + 32);
      view.setUint32(at + 96, it.message.byteLength);
      data.set(it.message, at + 100);
      at += 100 + it.message.byteLength;
    }
    const id = this.nextId++;
    this.batches.set(id, items);
    this.worker.postMessage({ id, n: items.length, data }, [data.buffer]);
  }

  private verifyInline(items: Item[]): void {
    for (const it of items) void this.fallback.verify(it.message, it.publicKey, it.signature).then(it.resolve);
  }

  terminate(): Promise<number> {
    return this.worker.terminate();
  }
}

/** Verifies on `threads` workers (started on first use), batching what arrives in one turn of the event loop. */
export class WorkerVerifier implements SignatureVerifier {
  private readonly inline = new InlineVerifier();
  private readonly workers: VerifyWorker[] = [];
  private queued: Item[] = [];
  private flushScheduled = false;
  private turn = 0;
  private closed = false;

  constructor(readonly threads: number) {
    if (!Number.isInteger(threads) || threads < 1) throw new Error("a worker verifier needs at least one thread");
  }

  verify(message: Uint8Array, publicKey: Uint8Array, signature: Uint8Array): Promise<boolean> {
    if (publicKey.byteLength !== 32 || signature.byteLength !== 64) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.queued.push({ message, publicKey, signature, resolve });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.flushScheduled = false;
    const items = this.queued;
    this.queued = [];
    if (!items.length) return;
    if (!this.workers.length && !this.closed) for (let i = 0; i < this.threads; i++) this.workers.push(new VerifyWorker(this.inline));
    const alive = this.workers.filter((w) => !w.gone);
    if (!alive.length) return void items.forEach((it) => void this.inline.verify(it.message, it.publicKey, it.signature).then(it.resolve));
    alive[this.turn++ % alive.length]!.send(items);
  }

  /** Stops the workers; what they had not answered, and anything asked later, is verified on the event loop. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

export function signatureVerifier(threads: number): SignatureVerifier {
  return threads > 0 ? new WorkerVerifier(threads) : new InlineVerifier();
}
