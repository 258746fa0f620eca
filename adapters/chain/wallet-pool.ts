// The server's upload wallets (SERVER_CHAIN_PRIVATE_KEYS, comma-separated, else SERVER_CHAIN_PRIVATE_KEY; Sui
// `suiprivkey1…` or 64 hex), used round-robin. A wallet's gas coin is an owned object: on Sui two transactions in
// flight on one coin equivocate and are refused, so a transaction takes a wallet with none in flight (`acquire`) and
// gives it back when it is final. A wallet whose call fails for reasons of its own (its coin locked, no funds, its
// calls not answering) or runs past the stall bound (./stall-bound.ts: a few times the median of the pool's recent
// transactions of the same kind, between a floor and `stallMs`; before enough were seen, of `expectedCallMs`) is
// taken out of rotation for `benchMs`, so it does not hold the others, and its lease's `stalled` says so (the caller
// sends its work on another wallet; the stalled call keeps its wallet, and so its coin, until it ends). Should every
// wallet be out, the one back soonest is used rather than none. A process has one pool, which its record batches and
// its manual records share (runtime/relayer-stack.ts); processes do not share theirs.
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { decodeSuiPrivateKey } from "@mysten/sui/cryptography";
import { PortError } from "../ports.ts";
import { isObjectLockConflict } from "./local/owned-object-locks.ts";
import { DEFAULT_STALL_BOUND, stallBound, type StallBoundOptions } from "./stall-bound.ts";

export interface Wallet {
  readonly address: string;
  readonly secretKey: Uint8Array;
}

export function parseWalletKey(raw: string): Wallet {
  const s = raw.trim();
  let secretKey: Uint8Array;
  if (s.startsWith("suiprivkey")) secretKey = decodeSuiPrivateKey(s).secretKey;
  else if (/^(0x)?[0-9a-fA-F]{64}$/.test(s)) secretKey = Uint8Array.from(Buffer.from(s.replace(/^0x/, ""), "hex"));
  else throw new Error("a wallet key must be a suiprivkey1… string or 32 bytes of hex");
  const address = Ed25519Keypair.fromSecretKey(secretKey).getPublicKey().toSuiAddress();
  return { address, secretKey };
}

/** Failures that are the paying wallet's, not the transaction's content: another wallet may well succeed. */
export function isWalletFault(err: unknown): boolean {
  if (!(err instanceof PortError)) return true;
  return err.kind === "unavailable" || err.kind === "insufficient_funds" || isObjectLockConflict(err.message);
}

const NONE: ReadonlySet<string> = new Set();

/** The pool judged a leased call stalled: the work moves to another wallet (a wallet fault: the call is `unavailable`). */
export class WalletStalled extends PortError {
  constructor() {
    super("chain", "unavailable", "the wallet's transaction stalled (no answer within the pool's stall bound)");
  }
}

/**
 * Runs `call` with the leased wallet's key and releases the lease by how it ends; rejects with WalletStalled as soon
 * as the pool judges it stalled. The stalled call keeps its wallet (and so its coin) until it ends; only the caller
 * moves on, which is safe because records are idempotent per (owner, blob id): one landing late changes nothing.
 */
export function callOnLease<T>(lease: WalletLease, call: (secretKey: Uint8Array) => Promise<T>): Promise<T> {
  const ended = call(lease.wallet.secretKey).then(
    (value) => {
      lease.release("ok");
      return value;
    },
    (err: unknown) => {
      lease.release(isWalletFault(err) ? "failed" : "ok");
      throw err;
    },
  );
  return Promise.race([ended, lease.stalled.then(() => Promise.reject(new WalletStalled()))]);
}

/**
 * What a leased call is: the record batcher's transactions (up to hundreds of record_blob calls each, sent the moment
 * a wallet is free) and a manual remember's (one record, after its client's upload) differ in shape and duration, so
 * each kind's stall bound is judged from the recent calls of that kind only.
 */
export type CallKind = "record_batch" | "manual_record";

/** How a leased wallet's call ended: `failed` when the failure was the wallet's (not the transaction's content). */
export type LeaseOutcome = "ok" | "failed";

/** One wallet, held for one transaction until `release`. */
export interface WalletLease {
  readonly wallet: Wallet;
  /** Settles when the pool judges this lease's call stalled (never, once released first). */
  readonly stalled: Promise<void>;
  release(outcome: LeaseOutcome): void;
}

export interface WalletPoolOptions {
  /** The most a call may run before its wallet leaves the rotation (also the bound until enough was seen). Default 20 s. */
  readonly stallMs?: number;
  /** The least the stall bound gets, however fast recent calls were. Default 3 s. */
  readonly stallFloorMs?: number;
  /**
   * What a healthy call is expected to take (ms) until a few of its kind have ended (config/network-profile.ts,
   * expectedTxMs): a call that hangs before then is judged against it, not the ceiling. Unset: the ceiling.
   */
  readonly expectedCallMs?: number;
  /** How long a wallet that failed or stalled stays out of rotation. Default 30 s. */
  readonly benchMs?: number;
  readonly clock?: () => number;
}

interface WalletState {
  readonly wallet: Wallet;
  /** When its transaction in flight started, or undefined when idle. */
  busySince: number | undefined;
  /** The kind of its transaction in flight (meaningless when idle). */
  kind: CallKind;
  /** Settles the lease's `stalled` once its call is judged stalled; undefined when idle or judged already. */
  onStall: (() => void) | undefined;
  /** Out of rotation until then. */
  benchedUntil: number;
}

/** Durations the stall bound's median is taken over: recent enough to follow a network that changes. */
const RECENT_CALLS = 32;

export class WalletPool {
  readonly wallets: readonly Wallet[];
  private readonly states: WalletState[];
  private cursor = 0;
  private readonly waiting: { readonly kind: CallKind; readonly avoid: ReadonlySet<string>; readonly take: (lease: WalletLease) => void }[] = [];
  private readonly benchMs: number;
  private readonly clock: () => number;
  private recheck: ReturnType<typeof setTimeout> | undefined;
  private readonly bound: StallBoundOptions;
  /** How long this pool's recent calls that ended well took (ms), oldest first, per kind. */
  private readonly recent = new Map<CallKind, number[]>();

  constructor(keys: readonly string[], opts: WalletPoolOptions = {}) {
    if (!keys.length) throw new Error("the wallet pool is empty: set SERVER_CHAIN_PRIVATE_KEYS");
    this.wallets = keys.map(parseWalletKey);
    this.states = this.wallets.map((wallet) => ({ wallet, busySince: undefined, kind: "record_batch", onStall: undefined, benchedUntil: 0 }));
    this.bound = { ...DEFAULT_STALL_BOUND, ceilingMs: opts.stallMs ?? DEFAULT_STALL_BOUND.ceilingMs, floorMs: opts.stallFloorMs ?? DEFAULT_STALL_BOUND.floorMs, priorMs: opts.expectedCallMs };
    this.benchMs = opts.benchMs ?? 30_000;
    this.clock = opts.clock ?? Date.now;
  }

  get size(): number {
    return this.wallets.length;
  }

  /** A call of this kind still running after this long (from what the pool has seen of the kind lately) takes its wallet out of rotation. */
  stallMs(kind: CallKind): number {
    return stallBound(this.recent.get(kind) ?? [], this.bound);
  }

  /**
   * The next wallet in rotation, for work that names a wallet without holding its coin (no transaction of its own):
   * wallets out of rotation are skipped while another is in.
   */
  next(): Wallet {
    const now = this.clock();
    this.benchStalled(now);
    const n = this.states.length;
    for (let i = 0; i < n; i++) {
      const s = this.states[(this.cursor + i) % n]!;
      if (s.benchedUntil <= now) {
        this.cursor = (this.cursor + i + 1) % n;
        return s.wallet;
      }
    }
    return this.soonestBack(this.states).wallet;
  }

  /**
   * A wallet with no transaction in flight, held for a call of `kind` until released; waits for one when all are in
   * flight. `avoid`: the addresses a caller has tried already, taken only when nothing else is left.
   */
  acquire(kind: CallKind, avoid: ReadonlySet<string> = NONE): Promise<WalletLease> {
    const lease = this.tryAcquire(kind, avoid);
    if (lease) return Promise.resolve(lease);
    return new Promise((take) => {
      this.waiting.push({ kind, avoid, take });
      this.recheckLater();
    });
  }

  /**
   * An idle wallet in rotation; while every wallet in rotation is in flight, none (wait for one); when no wallet is
   * in rotation at all, the idle one back soonest.
   */
  tryAcquire(kind: CallKind, avoid: ReadonlySet<string> = NONE): WalletLease | undefined {
    const now = this.clock();
    this.benchStalled(now);
    const n = this.states.length;
    let anyInRotation = false;
    for (let i = 0; i < n; i++) {
      const s = this.states[(this.cursor + i) % n]!;
      if (s.benchedUntil > now) continue;
      anyInRotation = true;
      if (s.busySince !== undefined) continue;
      this.cursor = (this.cursor + i + 1) % n;
      return this.lease(s, kind, now);
    }
    if (anyInRotation) return undefined;
    const idle = this.states.filter((s) => s.busySince === undefined);
    const untried = idle.filter((s) => !avoid.has(s.wallet.address));
    const pick = untried.length ? untried : idle;
    return pick.length ? this.lease(this.soonestBack(pick), kind, now) : undefined;
  }

  /** Wallets in rotation now (neither benched nor stalled), in pool order. */
  inRotation(): Wallet[] {
    const now = this.clock();
    this.benchStalled(now);
    return this.states.filter((s) => s.benchedUntil <= now).map((s) => s.wallet);
  }

  private lease(s: WalletState, kind: CallKind, now: number): WalletLease {
    s.busySince = now;
    s.kind = kind;
    const stalled = new Promise<void>((resolve) => (s.onStall = resolve));
    let released = false;
    this.recheckLater();
    return {
      wallet: s.wallet,
      stalled,
      release: (outcome) => {
        if (released) return;
        released = true;
        const t = this.clock();
        this.benchStalled(t);
        // A call that ended well, late ones included, tells how long calls take now; a failure tells nothing of that.
        if (outcome === "ok") this.remember(kind, t - s.busySince!);
        s.busySince = undefined;
        s.onStall = undefined;
        if (outcome === "failed") s.benchedUntil = Math.max(s.benchedUntil, t + this.benchMs);
        this.handOver();
      },
    };
  }

  private remember(kind: CallKind, ms: number): void {
    const recent = this.recent.get(kind) ?? [];
    recent.push(ms);
    if (recent.length > RECENT_CALLS) recent.shift();
    this.recent.set(kind, recent);
  }

  /** Gives a freed wallet to the longest waiter. */
  private handOver(): void {
    while (this.waiting.length) {
      const lease = this.tryAcquire(this.waiting[0]!.kind, this.waiting[0]!.avoid);
      if (!lease) break;
      this.waiting.shift()!.take(lease);
    }
    this.recheckLater();
  }

  /**
   * A call stalls, and a benched wallet comes back, with no release to announce it: at the earliest such moment
   * ahead, look again. Set anew each time, as a release can shorten the stall bound and so bring that moment nearer.
   */
  private recheckLater(): void {
    clearTimeout(this.recheck);
    this.recheck = undefined;
    const now = this.clock();
    // Calls not yet judged stalled, and (only waiters care) wallets coming back; a call judged stalled changes nothing
    // more until it ends (a release).
    const stalls = this.states.flatMap((s) => (s.onStall && s.busySince !== undefined ? [s.busySince + this.stallMs(s.kind)] : []));
    const backs = this.waiting.length ? this.states.map((s) => s.benchedUntil).filter((t) => t > now) : [];
    const moments = [...stalls, ...backs];
    if (!moments.length) return;
    this.recheck = setTimeout(() => {
      this.recheck = undefined;
      this.benchStalled(this.clock());
      this.handOver();
    }, Math.max(0, Math.min(...moments) - now));
    this.recheck.unref?.();
  }

  /** Benches every wallet whose call in flight has run past its kind's stall bound (from the moment it stalled), and says so to its lease. */
  private benchStalled(now: number): void {
    for (const s of this.states) {
      if (s.busySince === undefined) continue;
      const bound = this.stallMs(s.kind);
      if (now - s.busySince < bound) continue;
      s.benchedUntil = Math.max(s.benchedUntil, s.busySince + bound + this.benchMs);
      s.onStall?.();
      s.onStall = undefined;
    }
  }

  private soonestBack(states: readonly WalletState[]): WalletState {
    return states.reduce((best, s) => (s.benchedUntil < best.benchedUntil ? s : best));
  }
}
