// The server's upload wallets (SERVER_CHAIN_PRIVATE_KEYS, comma-separated, else SERVER_CHAIN_PRIVATE_KEY; Sui
// `suiprivkey1…` or 64 hex), used round-robin. A wallet's gas coin is an owned object: on Sui two transactions in
// flight on one coin equivocate and are refused, so a transaction takes a wallet with none in flight (`acquire`) and
// gives it back when it is final. A wallet whose call fails for reasons of its own (its coin locked, no funds, its
// calls not answering) or runs past `stallMs` is taken out of rotation for `benchMs`, so it does not hold the others;
// should every wallet be out, the one back soonest is used rather than none. Each process has its own pool (its own
// wallets in flight); nothing here needs to be shared.
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { decodeSuiPrivateKey } from "@mysten/sui/cryptography";
import { PortError } from "../ports.ts";
import { isObjectLockConflict } from "./local/owned-object-locks.ts";

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

/** How a leased wallet's call ended: `failed` when the failure was the wallet's (not the transaction's content). */
export type LeaseOutcome = "ok" | "failed";

/** One wallet, held for one transaction until `release`. */
export interface WalletLease {
  readonly wallet: Wallet;
  release(outcome: LeaseOutcome): void;
}

export interface WalletPoolOptions {
  /** A call still running after this long takes its wallet out of rotation. Default 20 s. */
  readonly stallMs?: number;
  /** How long a wallet that failed or stalled stays out of rotation. Default 30 s. */
  readonly benchMs?: number;
  readonly clock?: () => number;
}

interface WalletState {
  readonly wallet: Wallet;
  /** When its transaction in flight started, or undefined when idle. */
  busySince: number | undefined;
  /** Out of rotation until then. */
  benchedUntil: number;
}

export class WalletPool {
  readonly wallets: readonly Wallet[];
  private readonly states: WalletState[];
  private cursor = 0;
  private readonly waiting: { readonly avoid: ReadonlySet<string>; readonly take: (lease: WalletLease) => void }[] = [];
  private readonly benchMs: number;
  private readonly clock: () => number;
  private recheck: ReturnType<typeof setTimeout> | undefined;
  /** A call still running after this long takes its wallet out of rotation. */
  readonly stallMs: number;

  constructor(keys: readonly string[], opts: WalletPoolOptions = {}) {
    if (!keys.length) throw new Error("the wallet pool is empty: set SERVER_CHAIN_PRIVATE_KEYS");
    this.wallets = keys.map(parseWalletKey);
    this.states = this.wallets.map((wallet) => ({ wallet, busySince: undefined, benchedUntil: 0 }));
    this.stallMs = opts.stallMs ?? 20_000;
    this.benchMs = opts.benchMs ?? 30_000;
    this.clock = opts.clock ?? Date.now;
  }

  get size(): number {
    return this.wallets.length;
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
   * A wallet with no transaction in flight, held until released; waits for one when all are in flight. `avoid`: the
   * addresses a caller has tried already, taken only when nothing else is left.
   */
  acquire(avoid: ReadonlySet<string> = NONE): Promise<WalletLease> {
    const lease = this.tryAcquire(avoid);
    if (lease) return Promise.resolve(lease);
    return new Promise((take) => {
      this.waiting.push({ avoid, take });
      this.recheckLater();
    });
  }

  /**
   * An idle wallet in rotation; while every wallet in rotation is in flight, none (wait for one); when no wallet is
   * in rotation at all, the idle one back soonest.
   */
  tryAcquire(avoid: ReadonlySet<string> = NONE): WalletLease | undefined {
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
      return this.lease(s, now);
    }
    if (anyInRotation) return undefined;
    const idle = this.states.filter((s) => s.busySince === undefined);
    const untried = idle.filter((s) => !avoid.has(s.wallet.address));
    const pick = untried.length ? untried : idle;
    return pick.length ? this.lease(this.soonestBack(pick), now) : undefined;
  }

  /** Wallets in rotation now (neither benched nor stalled), in pool order. */
  inRotation(): Wallet[] {
    const now = this.clock();
    this.benchStalled(now);
    return this.states.filter((s) => s.benchedUntil <= now).map((s) => s.wallet);
  }

  private lease(s: WalletState, now: number): WalletLease {
    s.busySince = now;
    let released = false;
    return {
      wallet: s.wallet,
      release: (outcome) => {
        if (released) return;
        released = true;
        const t = this.clock();
        this.benchStalled(t);
        s.busySince = undefined;
        if (outcome === "failed") s.benchedUntil = Math.max(s.benchedUntil, t + this.benchMs);
        this.handOver();
      },
    };
  }

  /** Gives a freed wallet to the longest waiter. */
  private handOver(): void {
    while (this.waiting.length) {
      const lease = this.tryAcquire(this.waiting[0]!.avoid);
      if (!lease) return this.recheckLater();
      this.waiting.shift()!.take(lease);
    }
  }

  /**
   * Waiters also wake when a wallet stalls or comes back into rotation, which no release announces: at the earliest
   * such moment, look again.
   */
  private recheckLater(): void {
    if (this.recheck || !this.waiting.length) return;
    const now = this.clock();
    // Only moments still ahead: a wallet that stalled already changes nothing more until its call ends (a release).
    const moments = this.states.flatMap((s) => [...(s.busySince !== undefined ? [s.busySince + this.stallMs] : []), s.benchedUntil]).filter((t) => t > now);
    if (!moments.length) return;
    this.recheck = setTimeout(() => {
      this.recheck = undefined;
      this.handOver();
    }, Math.min(...moments) - now);
    this.recheck.unref?.();
  }

  /** Benches every wallet whose call in flight has run past stallMs (from the moment it stalled). */
  private benchStalled(now: number): void {
    for (const s of this.states) {
      if (s.busySince !== undefined && now - s.busySince >= this.stallMs) s.benchedUntil = Math.max(s.benchedUntil, s.busySince + this.stallMs + this.benchMs);
    }
  }

  private soonestBack(states: readonly WalletState[]): WalletState {
    return states.reduce((best, s) => (s.benchedUntil < best.benchedUntil ? s : best));
  }
}
