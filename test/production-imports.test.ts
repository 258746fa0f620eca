// Production code never imports from test/ (issue 33: `memrelay start` took its port helpers from test/support):
// a checkout shipped without its tests must still run.
import { describe, expect, it } from "vitest";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(fileURLToPath(new URL("..", import.meta.url)));
const production = ["actors", "adapters", "bin", "cli", "client", "config", "dashboard", "db", "eventlog", "gateway", "mcp", "projections", "runtime", "schemas", "scripts"];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|mts|mjs|js)$/.test(name) ? [path] : [];
  });
}

/** Relative module specifiers of static and dynamic imports and re-exports. */
const specifiers = (text: string) => [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*)["'](\.{1,2}\/[^"']+)["']/g)].map((m) => m[1]);

describe("production modules", () => {
  it("import nothing from test/", () => {
    const offending = production.flatMap((folder) =>
      sources(join(root, folder)).flatMap((file) =>
        specifiers(readFileSync(file, "utf8"))
          .filter((spec) => relative(root, resolve(dirname(file), spec)).split("/")[0] === "test")
          .map((spec) => `${relative(root, file)} imports ${spec}`),
      ),
    );
    expect(offending).toEqual([]);
  });

  it("the check sees an import from test/ (it can fail)", () => {
    expect(specifiers(`import { freePort } from "../test/support/nats-server.ts";\nconst m = await import("./x.ts");`)).toEqual(["../test/support/nats-server.ts", "./x.ts"]);
  });
});
