// Ports to the outside world (DESIGN.md section 5). Each has a real and a local implementation chosen by
// configuration; machines and gateways depend only on these interfaces.
import type { ChainTarget, MemoryAccount, SignedTx, StoredObject } from "../schemas/chain.ts";
import type { DecryptCredential } from "../schemas/encryption.ts";
import type { SponsoredTransaction } from "../schemas/relayer/sponsor.ts";
import type { SecretKeyInput } from "./chain/sui/keys.ts";

/** Failure classes every port reports, so hosts can decide: retry later, try another wallet, or give up. */
export type PortErrorKind = "unavailable" | "rejected" | "not_found" | "forbidden" | "insufficient_funds" | "invalid";

export class PortError extends Error {
  readonly _tag = "PortError";
  constructor(readonly port: string, readonly kind: PortErrorKind, message: string) {
    super(`${port}: ${message}`);
  }
  get retryable(): boolean {
    return this.kind === "unavailable";
  }
}

// ---------------------------------------------------------------- embeddings
export interface EmbeddingPort {
  readonly name: string;
  readonly dims: number;
  /** Embeds a batch; vectors are L2-normalised so cosine distance = 1 - dot. */
  embed(texts: readonly string[]): Promise<Float32Array[]>;
  /** Loads what the first embed would load (a local model's weights on every thread). */
  warmUp?(): Promise<void>;
}

// ---------------------------------------------------------------- blob store (Walrus HTTP API)
export interface StoredBlob {
  readonly blobId: string;
  readonly size: number;
  /** Walrus blob object id when newly created, or the existing one when already certified. */
  readonly objectId?: string;
  readonly alreadyCertified: boolean;
}

/** Several blobs stored as one Walrus quilt: the quilt's blob id and each patch identifier's quilt patch id. */
export interface StoredQuilt {
  readonly quiltId: string;
  /** identifier → quilt patch id */
  readonly patchIds: ReadonlyMap<string, string>;
}

export interface BlobPort {
  store(bytes: Uint8Array, opts?: { epochs?: number; sendObjectTo?: string; deletable?: boolean }): Promise<StoredBlob>;
  /** Stores the patches as one quilt (identifiers unique within it); `read` then takes a quilt patch id. */
  storeQuilt(patches: readonly { identifier: string; contents: Uint8Array }[], opts?: { epochs?: number; sendObjectTo?: string }): Promise<StoredQuilt>;
  read(blobId: string): Promise<Uint8Array>;
}

// ---------------------------------------------------------------- chain
export interface ResolvedAccount {
  readonly owner: string;
  readonly accountId: string;
}

export interface BlobObject {
  readonly objectId: string;
  readonly blobId: string;
  readonly owner: string;
  readonly namespace: string;
  readonly packageId: string;
  readonly createdAtMs: number;
  readonly size: number;
}

export interface WalletBalance {
  readonly address: string;
  /** token symbol -> amount in the smallest unit */
  readonly balances: Readonly<Record<string, bigint>>;
}

/** A blob to record for its owner, with its namespace attribute. */
export interface BlobRecordInput {
  readonly owner: string;
  readonly namespace: string;
  readonly blobId: string;
  readonly size: number;
}

export interface ChainPort {
  readonly packageId: string;
  readonly network: string;
  /**
   * Owner of the active account whose delegate_keys hold `publicKeyHex` (lowercase hex). `accountIdHint` is the
   * signed x-account-id: when given, only that account is checked. Reflects key removal immediately.
   */
  resolveDelegate(publicKeyHex: string, accountIdHint?: string): Promise<ResolvedAccount | null>;
  /** Records a blob object owned by `owner` with namespace and package attributes, paid by `walletSecretKey`. Idempotent per (owner, blobId). */
  recordBlob(input: BlobRecordInput & { walletSecretKey: Uint8Array }): Promise<BlobObject>;
  /**
   * Records several blobs in one transaction paid by `walletSecretKey`, in the order given; idempotent per
   * (owner, blobId). All or none: a refused record refuses the transaction.
   */
  recordBlobs(inputs: readonly BlobRecordInput[], walletSecretKey: Uint8Array): Promise<BlobObject[]>;
  /** Blob objects of the owner, newest first. */
  listBlobs(owner: string, opts: { namespace?: string; limit: number }): Promise<BlobObject[]>;
  accountExists(owner: string): Promise<boolean>;
  balance(address: string): Promise<WalletBalance>;
  /** The same chain with its server-signed writes (recordBlob) executed by `wrap(direct)`, e.g. sponsored. */
  withServerTransactions(wrap: (direct: ServerTransactions) => ServerTransactions): ChainPort;
}

/**
 * How a server-built transaction reaches the chain: `kind` (BCS TransactionKind) signed by `sender`, gas paid by the
 * sender (direct) or by a sponsor (adapters/chain/server-transactions.ts). PortError on failure.
 */
export interface ServerTransactions {
  execute(kind: Uint8Array, sender: SecretKeyInput): Promise<{ readonly digest: string }>;
}

// ---------------------------------------------------------------- sponsorship providers
/**
 * Who pays a sender's gas: the relayer's own gas station (SPONSOR_PRIVATE_KEY) or a provider speaking Enoki's protocol
 * (SPONSOR_API_KEY). Sponsor, have the sender sign the bytes, execute. PortError("sponsor", …): forbidden (the
 * provider refused our credentials), rejected (refused this transaction), unavailable; SponsorshipInvalidated when the
 * sponsored transaction expired before execution (sponsor it again).
 */
export interface SponsorshipPort {
  sponsor(input: { kindBytes: Uint8Array; sender: string; allowedMoveCallTargets?: readonly string[] }): Promise<SponsoredTransaction>;
  /** `bytes` are what sponsor() returned (a provider keeps its own copy and may ignore them). */
  execute(input: { digest: string; bytes: string; signature: string }): Promise<{ readonly digest: string }>;
}

export class SponsorshipInvalidated extends PortError {
  constructor(message: string) {
    super("sponsor", "rejected", message);
  }
}

/**
 * The chain refused a transaction because a signature on it does not verify: a refusal (forbidden) the console tells its
 * client apart from the chain's other ones, the client's signature being what it can correct.
 */
export class SignatureRejected extends PortError {
  constructor(port: string, message: string) {
    super(port, "forbidden", message);
  }
}

/** Accounts by their owner, and what account calls must name: what the dashboard reads for a browser wallet. */
export interface AccountDirectory {
  readonly target: ChainTarget;
  /** The owner's memory account (the registry's owner → account table), or null when it has none. */
  getAccountByOwner(owner: string): Promise<MemoryAccount | null>;
}

// ---------------------------------------------------------------- sponsored transactions (the console)
export interface ExecutedTx {
  readonly digest: string;
  /** Objects the transaction created or changed, as the chain shows them after it. */
  readonly objects: readonly StoredObject[];
}

/** The chain as the console uses it: transactions its clients sign and its sponsor co-signs, and the objects they leave. */
export interface SponsoredChainPort {
  readonly packageId: string;
  readonly network: string;
  /** What the transactions it executes must name. */
  readonly target: ChainTarget;
  /** Executes a transaction carrying the sender's and the gas sponsor's signatures. PortError kinds: forbidden, rejected, unavailable. */
  execute(tx: SignedTx): Promise<ExecutedTx>;
  getObject(objectId: string): Promise<StoredObject | null>;
}

// ---------------------------------------------------------------- language model (analyze, ask)
export interface AnswerInput {
  readonly question: string;
  /** Recalled memories, best first. */
  readonly memories: readonly { readonly text: string; readonly distance: number }[];
}

export interface LanguageModelPort {
  readonly name: string;
  /** Reported by /health as prompt_versions. */
  readonly promptVersions: { readonly extract: string; readonly ask: string };
  /** Atomic facts stated in `text`, dates written out against `occurredAt`. PortError: unavailable, invalid. */
  extractFacts(text: string, occurredAt: Date): Promise<string[]>;
  /** An answer grounded in the memories. */
  answer(input: AnswerInput): Promise<string>;
}

// ---------------------------------------------------------------- encryption
export type { DecryptCredential };

export interface EncryptionPort {
  /** Encrypts one memory for (owner, namespace). The result is self-contained: it names the key needed to open it. */
  encrypt(owner: string, namespace: string, plaintext: Uint8Array): Promise<Uint8Array>;
  /**
   * Opens a batch of ciphertexts of `owner` with the client's credential. A per-item failure yields null (the caller
   * counts it as dropped); a credential the key servers refuse fails the whole call with PortError("forbidden").
   */
  decryptMany(owner: string, ciphertexts: readonly Uint8Array[], credential: DecryptCredential): Promise<(Uint8Array | null)[]>;
}
