// What `memrelay` installs before its TypeScript loads (issue 33): the npm dependencies when node_modules does not
// match package-lock.json (by content: a checkout rewrites the lockfile's time), nats-server for `start`.
import { describe, expect, it } from "vitest";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { linkedNodeModules, lockMismatch, npmDependenciesState } from "../scripts/npm-dependencies.mjs";
import { findNatsServer, startsNatsServer } from "../scripts/prerequisites.mjs";

const lock = {
  packages: {
    "": { name: "memrelay" },
    "node_modules/tsx": { version: "4.23.15" },
    "node_modules/@nats-io/kv": { version: "3.4.0" },
    "node_modules/@esbuild/darwin-arm64": { version: "0.28.2", optional: true },
    "node_modules/a/node_modules/b": { version: "1.0.0" },
  },
};
const installedAsLocked = { packages: { "node_modules/tsx": { version: "4.23.15" }, "node_modules/@nats-io/kv": { version: "3.4.0" }, "node_modules/a/node_modules/b": { version: "1.0.0" } } };

function project(files: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), "memrelay-prereq-"));
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), JSON.stringify(content));
  }
  return dir;
}

describe("node_modules against package-lock.json", () => {
  it("matches when every locked package is installed at its version; other platforms' optional ones may be absent", () => {
    expect(lockMismatch(lock, installedAsLocked)).toBeUndefined();
    expect(lockMismatch(lock, { packages: { ...installedAsLocked.packages, "node_modules/extra": { version: "1.0.0" } } })).toBeUndefined();
  });

  it("names a locked package that is missing or at another version (a pull that changed the lockfile)", () => {
    const { ["node_modules/tsx"]: _tsx, ...withoutTsx } = installedAsLocked.packages;
    expect(lockMismatch(lock, { packages: withoutTsx })).toBe("tsx 4.23.15 is not installed");
    expect(lockMismatch(lock, { packages: { ...installedAsLocked.packages, "node_modules/@nats-io/kv": { version: "3.3.0" } } })).toBe("@nats-io/kv is 3.3.0, package-lock.json wants 3.4.0");
    expect(lockMismatch(lock, { packages: { ...installedAsLocked.packages, "node_modules/@esbuild/darwin-arm64": { version: "0.27.0" } } })).toMatch(/darwin-arm64 is 0.27.0/);
    expect(lockMismatch(lock, { packages: { ...installedAsLocked.packages, "node_modules/a/node_modules/b": { version: "2.0.0" } } })).toMatch(/^b is 2.0.0/);
  });

  it("a fresh clone, a foreign node_modules and a changed lockfile need npm ci; a lockfile newer by time only does not", () => {
    const fresh = project({ "package-lock.json": lock });
    const foreign = project({ "package-lock.json": lock, "node_modules/tsx/package.json": {} });
    const installed = project({ "package-lock.json": lock, "node_modules/.package-lock.json": installedAsLocked });
    const outdated = project({ "package-lock.json": lock, "node_modules/.package-lock.json": { packages: { "node_modules/tsx": { version: "4.0.0" } } } });
    const installedPackage = project({ "package.json": {} });
    try {
      expect(npmDependenciesState(fresh)).toEqual({ current: false, reason: "node_modules is missing" });
      expect(npmDependenciesState(foreign)).toMatchObject({ current: false, reason: expect.stringMatching(/not installed by npm/) });
      expect(npmDependenciesState(installed)).toEqual({ current: true });
      // A checkout (or another branch) rewrote the lockfile after the install without changing it.
      const later = new Date(Date.now() + 60_000);
      utimesSync(join(installed, "package-lock.json"), later, later);
      expect(npmDependenciesState(installed)).toEqual({ current: true });
      utimesSync(join(outdated, "package-lock.json"), later, later);
      expect(npmDependenciesState(outdated)).toEqual({ current: false, reason: "node_modules is out of date (tsx is 4.0.0, package-lock.json wants 4.23.15)" });
      expect(npmDependenciesState(installedPackage)).toEqual({ current: true });
    } finally {
      for (const d of [fresh, foreign, installed, outdated, installedPackage]) rmSync(d, { recursive: true, force: true });
    }
  });

  it("a node_modules linked from elsewhere is told apart (it is not reinstalled: other checkouts use it)", () => {
    const shared = project({ "node_modules/.package-lock.json": installedAsLocked });
    const checkout = project({ "package-lock.json": lock });
    try {
      expect(linkedNodeModules(checkout)).toBeUndefined();
      symlinkSync(join(shared, "node_modules"), join(checkout, "node_modules"));
      expect(linkedNodeModules(checkout)).toBe(join(shared, "node_modules"));
    } finally {
      for (const d of [shared, checkout]) rmSync(d, { recursive: true, force: true });
    }
  });
});

describe("nats-server for memrelay start", () => {
  it("is needed by `start` only, and not when NATS_URL or NATS_SERVER_BIN says where it is", () => {
    expect(startsNatsServer(["start"], {})).toBe(true);
    expect(startsNatsServer(["start", "--network", "testnet"], {})).toBe(true);
    expect(startsNatsServer(["start", "--help"], {})).toBe(false);
    expect(startsNatsServer(["start"], { NATS_URL: "nats://127.0.0.1:4222" })).toBe(false);
    expect(startsNatsServer(["start"], { NATS_SERVER_BIN: "/opt/nats/nats-server" })).toBe(false);
    expect(startsNatsServer(["recall", "tea"], {})).toBe(false);
    expect(startsNatsServer([], {})).toBe(false);
  });

  it("is found on the PATH, and only as an executable file", () => {
    const dir = mkdtempSync(join(tmpdir(), "memrelay-path-"));
    try {
      const bin = join(dir, "nats-server");
      writeFileSync(bin, "#!/bin/sh\n");
      chmodSync(bin, 0o644);
      expect(findNatsServer({ PATH: dir })).not.toBe(bin);
      chmodSync(bin, 0o755);
      expect(findNatsServer({ PATH: `/nonexistent:${dir}` })).toBe(bin);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
