// The real chain adapters (adapters/chain/sui-rpc/) and the neutral Sui modules (adapters/chain/sui/) run no code of
// the local ledger (adapters/chain/local/): the encoding they share lives in adapters/chain/sui/ (issue 30). Type-only
// imports of the call catalogue's argument types are erased at run time, so they are allowed.
import { describe, expect, it } from "vitest";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(fileURLToPath(new URL("..", import.meta.url)));
const neutral = ["adapters/chain/sui", "adapters/chain/sui-rpc"];

/** Relative specifiers of value imports, re-exports and dynamic imports (not `import type`). */
const valueImports = (text: string) =>
  [...text.matchAll(/(?:\bimport\s+(?!type\b)[^;]*?\bfrom\s*|\bexport\s+[^;]*?\bfrom\s*|\bimport\s*\(\s*)["'](\.{1,2}\/[^"']+)["']/g)].map((m) => m[1]);

const intoLocal = (file: string, spec: string) => relative(root, resolve(dirname(file), spec)).startsWith("adapters/chain/local/");

describe("neutral chain modules", () => {
  it("import no value from the local ledger", () => {
    const offending = neutral.flatMap((dir) =>
      readdirSync(join(root, dir))
        .filter((name) => name.endsWith(".ts"))
        .flatMap((name) => {
          const file = join(root, dir, name);
          return valueImports(readFileSync(file, "utf8"))
            .filter((spec) => intoLocal(file, spec))
            .map((spec) => `${dir}/${name} imports ${spec}`);
        }),
    );
    expect(offending).toEqual([]);
  });

  it("the check sees a value import and lets a type import through (it can fail)", () => {
    const file = join(root, "adapters/chain/sui-rpc/x.ts");
    const text = `import { encodeTransactionKind } from "../local/transaction-data.ts";\nimport type { CallKind } from "../local/model.ts";`;
    expect(valueImports(text).filter((s) => intoLocal(file, s))).toEqual(["../local/transaction-data.ts"]);
  });
});
