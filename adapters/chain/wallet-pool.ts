// The server's upload wallets (SERVER_CHAIN_PRIVATE_KEYS, comma-separated; Sui `suiprivkey1…` or 64 hex), used
// round-robin. Each process rotates through the pool independently; nothing here needs to be shared.
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { decodeSuiPrivateKey } from "@mysten/sui/cryptography";

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

export class WalletPool {
  private cursor = 0;
  readonly wallets: readonly Wallet[];

  constructor(keys: readonly string[]) {
    if (!keys.length) throw new Error("the wallet pool is empty: set SERVER_CHAIN_PRIVATE_KEYS");
    this.wallets = keys.map(parseWalletKey);
  }

  next(): Wallet {
    const w = this.wallets[this.cursor % this.wallets.length];
    this.cursor = (this.cursor + 1) % this.wallets.length;
    return w;
  }
}
