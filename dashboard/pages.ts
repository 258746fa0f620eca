// The dashboard's pages, plain HTML with a little script (no build step). Each carries the server's token in a meta
// tag; the script sends it on every API call. Text from the query string is inserted as text, never as HTML.

/** What a page offers: the development wallet (local network only) beside browser wallets, and the chain they sign for. */
export interface PageView {
  readonly developmentWallet: boolean;
  /** Wallet-standard chain id of the dashboard's network, e.g. `sui:testnet`. */
  readonly walletChain: string;
}
const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:640px;margin:48px auto;padding:0 24px;color:#1a1a1a}
h1{font-size:22px}code{background:#f4f4f5;padding:1px 4px;border-radius:4px;word-break:break-all}
button{font:inherit;padding:6px 14px;border-radius:6px;border:1px solid #888;background:#fff;cursor:pointer}
button.primary{background:#111;color:#fff;border-color:#111}table{border-collapse:collapse;width:100%}
td,th{text-align:left;padding:6px 8px;border-bottom:1px solid #e4e4e7}.ok{color:#15803d}.err{color:#b91c1c}`;

const shell = (title: string, token: string, body: string, script: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title} · memrelay</title>
<meta name="dashboard-token" content="${token}"><style>${STYLE}</style></head>
<body>${body}<script>
const token = document.querySelector('meta[name="dashboard-token"]').content;
async function api(path, body) {
  const res = await fetch(path, body === undefined ? { headers: { "x-dashboard-token": token } }
    : { method: "POST", headers: { "x-dashboard-token": token, "content-type": "application/json" }, body: JSON.stringify(body) });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(data.error || ("status " + res.status));
  return data;
}
${script}
</script></body></html>`;

/**
 * The Sui wallet standard, app side, shared by the pages: wallets announce themselves before or after the page is
 * ready; `walletCall` runs one sponsored account call with a wallet (prepare → sign the sponsorship request → /sponsor
 * → sign the transaction → execute), the dashboard relaying to the relayer.
 */
const wallets = (view: PageView) => `const WALLET_CHAIN = ${JSON.stringify(view.walletChain)};
const SUI_FEATURES = ["standard:connect", "sui:signPersonalMessage", "sui:signTransaction"];
const walletListeners = [];
const seenWallets = [];
const registry = { register: (...wallets) => {
  for (const w of wallets) if (SUI_FEATURES.every((f) => w.features && w.features[f])) { seenWallets.push(w); walletListeners.forEach((l) => l(w)); }
  return () => {};
} };
function onWallet(listener) { walletListeners.push(listener); seenWallets.forEach(listener); }
window.addEventListener("wallet-standard:register-wallet", (e) => e.detail(registry));
window.dispatchEvent(new CustomEvent("wallet-standard:app-ready", { detail: registry }));
async function walletAccount(wallet) {
  const { accounts } = await wallet.features["standard:connect"].connect();
  if (!accounts || !accounts[0]) throw new Error(wallet.name + " shared no account");
  return accounts[0];
}
async function walletCall(wallet, account, call, say) {
  const prepared = await api("/api/wallet/prepare", { owner: account.address, ...call });
  say("Sign the request for sponsored gas in " + wallet.name + "…");
  const auth = await wallet.features["sui:signPersonalMessage"].signPersonalMessage({ message: new TextEncoder().encode(prepared.message), account });
  const sponsored = await api("/api/wallet/sponsor", { sender: account.address, transactionBlockKindBytes: prepared.transactionBlockKindBytes,
    authTimestamp: prepared.authTimestamp, authNonce: prepared.authNonce, authSignature: auth.signature });
  say("Approve the transaction in " + wallet.name + "…");
  const signed = await wallet.features["sui:signTransaction"].signTransaction({ transaction: { toJSON: async () => sponsored.bytes }, account, chain: WALLET_CHAIN });
  await api("/api/wallet/execute", { digest: sponsored.digest, signature: signed.signature, sender: account.address });
  return prepared;
}`;

/** Who signs, in the pages' words. */
const signers = (view: PageView) =>
  view.developmentWallet ? "this stack's development wallet, or a Sui wallet in your browser" : "your Sui wallet in this browser";
/** The development wallet's button, where there is one. */
const approveButton = (view: PageView) => (view.developmentWallet ? `<button class="primary" id="approve">Approve</button> ` : "");
/** Said until a browser wallet shows up, when nothing else can approve. */
const noWalletYet = (view: PageView) =>
  view.developmentWallet ? "" : "Approve with your Sui wallet's button above; if none appears, install a wallet that supports the Sui wallet standard and reload.";

/**
 * `/connect?port&publicKey&state[&label]` (memrelay-mcp) and `/connect/mcp?…&delegateAddress&relayer` (MemWal's
 * package, `loginTool` memwal_login; the extra parameters are not needed: the key's address follows from the key, and
 * the relayer the package uses is its own business): approve the package's new key, then hand the result back to its
 * loopback listener (`{state, accountId, walletAddress, packageId, label}`, what both packages read). A browser
 * wallet (Sui wallet standard: connect, signPersonalMessage, signTransaction) approves for its own account with the
 * gas sponsored by the relayer; on the local network the development wallet can approve through the dashboard.
 */
export const connectPage = (token: string, view: PageView, loginTool: string) =>
  shell(
    "Connect an agent",
    token,
    `<h1>Connect an agent to your memory</h1>
<p>An agent asks to use your memory with a new key:</p>
<p><b id="label"></b><br>key <code id="key"></code></p>
<p>Approving adds the key to your account, in a transaction signed by ${signers(view)} (the memory service pays the
gas). You can revoke it at any time on the <a href="/keys">keys page</a>.</p>
<p>${approveButton(view)}<span id="wallets"></span></p>
<p id="status" role="status"></p>`,
    `${wallets(view)}
const q = new URLSearchParams(location.search);
const port = q.get("port"), publicKey = q.get("publicKey"), state = q.get("state"), label = q.get("label") || "agent";
const status = document.getElementById("status");
const say = (text, cls) => { status.textContent = text; status.className = cls || ""; };
document.getElementById("label").textContent = label;
document.getElementById("key").textContent = publicKey || "(missing)";
const approve = document.getElementById("approve");
const valid = /^[0-9]{1,5}$/.test(port || "") && /^[0-9a-fA-F]{64}$/.test(publicKey || "") && /^[0-9a-f]{64}$/.test(state || "");
if (!valid) say(${JSON.stringify(`This link is incomplete or damaged: ask the agent for a new one (${loginTool}).`)}, "err");
else say(${JSON.stringify(noWalletYet(view))});
const buttons = () => [approve, ...document.querySelectorAll("#wallets button")].filter(Boolean);
const enable = (on) => buttons().forEach((b) => (b.disabled = !on || !valid));
async function handBack(approved) {
  say("Handing the key back to the agent…");
  const res = await fetch("http://127.0.0.1:" + port + "/callback", { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify({ state, accountId: approved.accountId, walletAddress: approved.walletAddress, packageId: approved.packageId, label }) });
  const back = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(back.error || ("the agent answered " + res.status));
  say("Connected. The agent can use your memory now; you can close this tab.", "ok");
}
async function attempt(steps) {
  enable(false);
  try { await steps(); }
  catch (e) {
    say("Not connected: " + e.message + ". The link is valid 5 minutes; ask the agent for a new one if it expired.", "err");
    enable(true);
  }
}
enable(true);
if (approve) approve.addEventListener("click", () => attempt(async () => {
  say("Adding the key to your account…");
  const approved = await api("/api/approve", { publicKey, label });
  await handBack(approved);
}));
onWallet((wallet) => {
  const b = document.createElement("button");
  b.textContent = "Approve with " + wallet.name;
  b.disabled = !valid;
  b.addEventListener("click", () => attempt(async () => {
    say("Connecting to " + wallet.name + "…");
    const account = await walletAccount(wallet);
    const prepared = await walletCall(wallet, account, { call: "add", publicKey, label }, say);
    await handBack({ accountId: prepared.accountId, walletAddress: account.address, packageId: prepared.packageId });
  }));
  document.getElementById("wallets").append(b);
});`,
  );

/**
 * `/keys`: an account's delegate keys, newest first, each with a revoke button: after "Use <wallet>", a browser
 * wallet's own account's, revoked by that wallet with the gas sponsored; before that, on the local network, the
 * development account's, revoked by the development wallet.
 */
export const keysPage = (token: string, view: PageView) =>
  shell(
    "Delegate keys",
    token,
    `<h1>Delegate keys</h1>
<p>Account <code id="account"></code> <span id="wallets"></span></p>
<table><thead><tr><th>Label</th><th>Created</th><th>Key</th><th></th></tr></thead><tbody id="keys"></tbody></table>
<p id="status" role="status"></p>`,
    `${wallets(view)}
const status = document.getElementById("status");
const say = (text, cls) => { status.textContent = text; status.className = cls || ""; };
/** Where the keys come from and how one is revoked: the development wallet, or a browser wallet's own account. */
let source = ${view.developmentWallet ? `{ load: () => api("/api/keys"), revoke: (k) => api("/api/revoke", { publicKey: k.publicKey }) }` : "null"};
async function load() {
  const data = await source.load();
  document.getElementById("account").textContent = data.accountId;
  const rows = document.getElementById("keys");
  rows.replaceChildren();
  for (const k of [...data.keys].sort((a, b) => b.createdAt.localeCompare(a.createdAt))) {
    const tr = document.createElement("tr");
    tr.dataset.key = k.publicKey;
    for (const text of [k.label || "(no label)", new Date(k.createdAt).toLocaleString(), k.publicKey.slice(0, 12) + "…"]) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.append(td);
    }
    const td = document.createElement("td");
    const b = document.createElement("button");
    b.textContent = "Revoke";
    b.addEventListener("click", async () => {
      b.disabled = true;
      try {
        await source.revoke(k);
        say("Revoked " + (k.label || k.publicKey.slice(0, 12)) + ": the relayer refuses it from the next request.", "ok");
        await load();
      } catch (e) { say("Not revoked: " + e.message, "err"); b.disabled = false; }
    });
    td.append(b);
    tr.append(td);
    rows.append(tr);
  }
}
onWallet((wallet) => {
  const b = document.createElement("button");
  b.textContent = "Use " + wallet.name;
  b.addEventListener("click", async () => {
    try {
      const account = await walletAccount(wallet);
      source = {
        load: () => api("/api/wallet/keys", { owner: account.address }),
        revoke: (k) => walletCall(wallet, account, { call: "remove", publicKey: k.publicKey }, say),
      };
      await load();
      say("Showing the keys of " + wallet.name + "'s account.");
    } catch (e) { say("Could not use " + wallet.name + ": " + e.message, "err"); }
  });
  document.getElementById("wallets").append(b);
});
if (source) load().catch((e) => say("Could not load the keys: " + e.message, "err"));
else say("Use your Sui wallet's button above to see its account's keys; if none appears, install a wallet that supports the Sui wallet standard and reload.");`,
  );

/**
 * `/connect/claude?grant=<id>` (OAuth consent, spec: consent URL): the relayer made a delegate key for an agent
 * platform; approving adds its public key to the account with the wallet, then tells the relayer, which sends the
 * browser back to the platform with a single-use code. The relayer is the dashboard's own, never one from the URL.
 */
export const consentPage = (token: string, view: PageView, relayerUrl: string) =>
  shell(
    "Authorize an agent platform",
    token,
    `<h1>Authorize <span id="client"></span></h1>
<p><b id="client2"></b> (returning to <code id="host"></code>) asks to use your memory. Approving adds a key held by
the memory service to your account, signed by ${signers(view)} (the memory service pays the gas); you can revoke it
on the <a href="/keys">keys page</a>, which ends the platform's access.</p>
<p>${approveButton(view)}<span id="wallets"></span> <button id="deny">Deny</button></p>
<p id="status" role="status"></p>`,
    `${wallets(view)}
const relayer = ${JSON.stringify(relayerUrl)};
const grant = new URLSearchParams(location.search).get("grant") || "";
const status = document.getElementById("status");
const say = (text, cls) => { status.textContent = text; status.className = cls || ""; };
const buttons = () => [document.getElementById("approve"), document.getElementById("deny"), ...document.querySelectorAll("#wallets button")].filter(Boolean);
const enable = (on) => buttons().forEach((b) => (b.disabled = !on));
async function relayerCall(path, body) {
  const res = await fetch(relayer + path, body === undefined ? {} : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(data.error_description || data.error || ("status " + res.status));
  return data;
}
let info;
enable(false);
relayerCall("/oauth/consent/" + encodeURIComponent(grant)).then((i) => {
  info = i;
  document.getElementById("client").textContent = i.client_name;
  document.getElementById("client2").textContent = i.client_name;
  document.getElementById("host").textContent = i.redirect_host;
  enable(true);
}, (e) => say("This authorization cannot be answered: " + e.message + ". Start again from the agent platform.", "err"));
// Adds the grant's key with addKey (which answers the account id), then tells the relayer, which returns to the platform.
async function approveWith(addKey) {
  enable(false);
  try {
    say("Adding the key to your account…");
    const accountId = await addKey({ publicKey: info.delegate_public_key, label: "OAuth · " + info.client_name });
    say("Returning to " + info.client_name + "…");
    const done = await relayerCall("/oauth/consent", { grant_id: grant, account_id: accountId, decision: "approve" });
    location.assign(done.redirect);
  } catch (e) { say("Not authorized: " + e.message, "err"); enable(true); }
}
document.getElementById("approve")?.addEventListener("click", () => approveWith(async (key) => (await api("/api/approve", key)).accountId));
onWallet((wallet) => {
  const b = document.createElement("button");
  b.textContent = "Approve with " + wallet.name;
  b.disabled = !info;
  b.addEventListener("click", () => approveWith(async (key) => (await walletCall(wallet, await walletAccount(wallet), { call: "add", ...key }, say)).accountId));
  document.getElementById("wallets").append(b);
});
document.getElementById("deny").addEventListener("click", async () => {
  enable(false);
  try { location.assign((await relayerCall("/oauth/consent", { grant_id: grant, decision: "deny" })).redirect); }
  catch (e) { say(e.message, "err"); enable(true); }
});`,
  );
