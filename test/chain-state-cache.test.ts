// The ledger's cache of chain state entries (adapters/chain/local/state-cache.ts): valid for one applied sequence.
import { describe, expect, it } from "vitest";
import { StateCache } from "../adapters/chain/local/state-cache.ts";

const entry = (seq: number, revision = seq) => ({ value: { n: seq }, revision, seq });

describe("StateCache", () => {
  it("keeps entries while the applied sequence stays the one they describe, and empties on another", () => {
    const c = new StateCache();
    c.validFor(5);
    c.remember("k", entry(3));
    c.validFor(5);
    expect(c.get("k")).toEqual(entry(3));
    c.validFor(6); // another writer's block
    expect(c.get("k")).toBeUndefined();
  });

  it("does not keep an entry written by a block newer than its state (one being materialised elsewhere)", () => {
    const c = new StateCache();
    c.validFor(5);
    c.remember("k", entry(6));
    expect(c.get("k")).toBeUndefined();
  });

  it("moves to the state after its own block, with that block's writes", () => {
    const c = new StateCache();
    c.validFor(5);
    c.remember("old", entry(2));
    c.advance(6, new Map([["k", entry(6, 40)]]));
    c.validFor(6);
    expect(c.get("k")).toEqual(entry(6, 40));
    expect(c.get("old")).toEqual(entry(2));
    c.clear();
    c.validFor(6);
    expect(c.get("k")).toBeUndefined();
  });

  it("holds at most its bound, dropping the least recently used", () => {
    const c = new StateCache(2);
    c.validFor(1);
    c.remember("a", entry(1));
    c.remember("b", entry(1));
    expect(c.get("a")).toBeDefined();
    c.remember("a", entry(1)); // used again
    c.remember("c", entry(1));
    expect(c.get("b")).toBeUndefined();
    expect(c.get("a")).toBeDefined();
    expect(c.get("c")).toBeDefined();
  });
});
