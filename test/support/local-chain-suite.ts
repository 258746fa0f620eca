// The local chain suites (test/chain-*.test.ts): each file calls useLocalChainSuite() and so gets a private
// nats-server with two chain instances on it, started before its tests and closed after them: `a` opened on the
// EventLog, `b` standing for a second process on its own bare connection. The bindings below follow that file's
// instances. Plus the checks and the funding those files share.
import { afterAll, beforeAll, expect } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { startNatsServer, type NatsServerHandle } from "./nats-server.ts";
import { openEventLog, type EventLog } from "../../eventlog/connection.ts";
import { STREAMS } from "../../eventlog/subjects.ts";
import { PortError } from "../../adapters/ports.ts";
import { LocalChain } from "../../adapters/chain/local/local-chain.ts";
import { generateKeypair, mint } from "../../adapters/chain/local/accounts.ts";
import { CHAIN_TX_SUBJECT } from "../../adapters/chain/local/state-keys.ts";

export const PACKAGE_ID = "0x" + "ab".repeat(32);
export const NETWORK = "localnet";

export let server: NatsServerHandle;
export let log: EventLog;
let rawNc: NatsConnection;
export let a: LocalChain; // opened on the EventLog
export let b: LocalChain; // a second process: its own bare connection
export const operator = generateKeypair();

/** Starts this file's nats-server and chain instances before its tests and closes them after them. */
export function useLocalChainSuite(): void {
  beforeAll(async () => {
    server = await startNatsServer();
    log = await openEventLog({ servers: server.url, name: "chain-test-a" });
    rawNc = await connect({ servers: server.url, name: "chain-test-b" });
    // no background healing on these two, so the crash tests can observe a state left behind
    a = await LocalChain.open(log, { packageId: PACKAGE_ID, network: NETWORK, operatorKey: operator.secretKey, healIntervalMs: 0 });
    b = await LocalChain.open(rawNc, { packageId: PACKAGE_ID, network: NETWORK, healIntervalMs: 0 });
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    await rawNc?.close();
    await log?.close();
    await server?.cleanup();
  });
}

export async function expectPortError(p: Promise<unknown>, kind: PortError["kind"]): Promise<PortError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PortError);
  expect((err as PortError).kind).toBe(kind);
  return err as PortError;
}

export async function fundedKey(amountSui = 1n) {
  const k = generateKeypair();
  await mint(a, { operatorKey: operator.secretKey, to: k.keypair.address, amount: amountSui * 1_000_000_000n });
  return k;
}

export function blobId(n: number | string): string {
  return Buffer.from(`blob-${n}-${Math.random()}`).toString("base64url").slice(0, 43);
}

export async function chainTxCount(): Promise<number> {
  const info = await log.jsm.streams.info(STREAMS.chain, { subjects_filter: CHAIN_TX_SUBJECT });
  return info.state.messages;
}
