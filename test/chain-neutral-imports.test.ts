// The real chain adapters (adapters/chain/sui-rpc/) and the neutral Sui modules (adapters/chain/sui/) run no code of
// the local ledger (adapters/chain/local/) and name none of its types: the encoding and the call catalogue they share
// live in adapters/chain/sui/ (issue 30), which the ledger imports too.
import { describe, expect, it } from "vitest";
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(fileURLToPath(new URL("..", import.meta.url)));
const neutral = ["adapters/chain/sui", "adapters/chain/sui-rpc"];

/** Relative specifiers of imports (values and types), re-exports and dynamic imports. */
const imports = (text: string) => [...text.matchAll(/(?:\bimport\s+[^;]*?\bfrom\s*|\bexport\s+[^;]*?\bfrom\s*|\bimport\s*\(\s*)["'](\.{1,2}\/[^"']+)["']/g)].map((m) => m[1]);

const intoLocal = (file: string, spec: string) => relative(root, resolve(dirname(file), spec)).startsWith("adapters/chain/local/");

describe("neutral chain modules", () => {
  it("import nothing from the local ledger, types included", () => {
    const offending = neutral.flatMap((dir) =>
      readdirSync(join(root, dir))
        .filter((name) => name.endsWith(".ts"))
        .flatMap((name) => {
          const file = join(root, dir, name);
          return imports(readFileSync(file, "utf8"))
            .filter((spec) => intoLocal(file, spec))
            .map((spec) => `${dir}/${name} imports ${spec}`);
        }),
    );
    expect(offending).toEqual([]);
  });

  it("the check sees value, type, re-exported and dynamic imports, and passes a neutral one (it can fail)", () => {
    const file = join(root, "adapters/chain/sui-rpc/x.ts");
    const text = [
      `import { encodeTransactionKind } from "../local/transaction-data.ts";`,
      `import type { TxBody } from "../local/model.ts";`,
      `export type { Account } from "../local/model.ts";`,
      `const m = await import("../local/tx.ts");`,
      `import type { CallKind } from "../sui/call-kinds.ts";`,
    ].join("\n");
    expect(imports(text).filter((s) => intoLocal(file, s))).toEqual(["../local/transaction-data.ts", "../local/model.ts", "../local/model.ts", "../local/tx.ts"]);
  });
});
