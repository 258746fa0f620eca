// A Sui wallet-standard wallet injected into a Chromium page, its key held by the test: what a wallet extension
// provides (standard:connect, sui:signPersonalMessage, sui:signTransaction). Returns what it was asked to sign, in
// order: the first line of each personal message, the Move function of each transaction.
import { expect } from "vitest";
import type { Page } from "playwright-core";
import { Ed25519Keypair } from "@mysten/sui/keypairs/ed25519";
import { Transaction } from "@mysten/sui/transactions";
import type { LocalChain } from "../../adapters/chain/local/local-chain.ts";
import { createAccount, mint } from "../../adapters/chain/local/accounts.ts";
import type { Account } from "../../adapters/chain/local/model.ts";
import { GAS_FEE_MIST } from "../../adapters/chain/sui/transaction-envelope.ts";

/** A wallet whose owner has an account and no gas left: whatever it signs next, the relayer must sponsor. */
export async function gaslessWalletWithAccount(stack: { chain: LocalChain; operatorSecretKey: Uint8Array }): Promise<{ wallet: Ed25519Keypair; account: Account }> {
  const wallet = Ed25519Keypair.generate();
  await mint(stack.chain, { operatorKey: stack.operatorSecretKey, to: wallet.toSuiAddress(), amount: GAS_FEE_MIST });
  const account = await createAccount(stack.chain, { ownerKey: wallet.getSecretKey() });
  expect((await stack.chain.balance(wallet.toSuiAddress())).balances.SUI).toBe(0n);
  return { wallet, account };
}

/** On the dashboard's keys page, the injected wallet shows its account and revokes the key labelled `label`. */
export async function revokeWithWallet(page: Page, dashboardUrl: string, accountId: string, label: string, timeoutMs: number): Promise<void> {
  await page.goto(`${dashboardUrl}/keys`);
  await page.click("button:has-text('Use Test Wallet')");
  await expect.poll(() => page.locator("#account").textContent()).toBe(accountId);
  const row = page.locator("tr", { hasText: label });
  await expect.poll(() => row.count()).toBe(1);
  await row.locator("button", { hasText: "Revoke" }).click();
  await expect.poll(() => page.locator("#status").textContent(), { timeout: timeoutMs }).toMatch(new RegExp(`^Revoked ${label}`));
}

export async function injectSuiWallet(page: Page, wallet: Ed25519Keypair, name = "Test Wallet"): Promise<string[]> {
  const signed: string[] = [];
  await page.exposeFunction("__walletSign", async (what: "message" | "transaction", b64: string) => {
    const bytes = Buffer.from(b64, "base64");
    signed.push(what === "transaction" ? Transaction.from(b64).getData().commands[0]!.MoveCall!.function : new TextDecoder().decode(bytes).split("\n")[0]!);
    return what === "message" ? (await wallet.signPersonalMessage(bytes)).signature : (await wallet.signTransaction(bytes)).signature;
  });
  await page.addInitScript(
    ({ address, name }: { address: string; name: string }) => {
      // runs in the page (no DOM types here): the window as far as the wallet uses it
      const win = globalThis as unknown as { __walletSign: (w: string, b: string) => Promise<string>; addEventListener(t: string, f: (e: CustomEvent) => void): void; dispatchEvent(e: Event): void };
      const b64 = (u: Uint8Array) => btoa(String.fromCharCode(...u));
      const account = { address, publicKey: new Uint8Array(32), chains: ["sui:localnet"], features: [] };
      const wallet = {
        version: "1.0.0",
        name,
        icon: "data:image/svg+xml;base64,",
        chains: ["sui:localnet"],
        accounts: [account],
        features: {
          "standard:connect": { version: "1.0.0", connect: async () => ({ accounts: [account] }) },
          "sui:signPersonalMessage": { version: "1.1.0", signPersonalMessage: async ({ message }: { message: Uint8Array }) => ({ bytes: b64(message), signature: await win.__walletSign("message", b64(message)) }) },
          "sui:signTransaction": {
            version: "2.0.0",
            signTransaction: async ({ transaction }: { transaction: { toJSON(): Promise<string> } }) => {
              const bytes = await transaction.toJSON();
              return { bytes, signature: await win.__walletSign("transaction", bytes) };
            },
          },
        },
      };
      const register = (api: { register(w: unknown): unknown }) => api.register(wallet);
      win.addEventListener("wallet-standard:app-ready", (e) => register(e.detail));
      win.dispatchEvent(new CustomEvent("wallet-standard:register-wallet", { detail: register }));
    },
    { address: wallet.toSuiAddress(), name },
  );
  return signed;
}
