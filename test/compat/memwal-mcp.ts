// MemWal's MCP package (packages/mcp), built unmodified and driven as an agent host drives it: the checks live with
// the test that runs them in `npm test` when MEMWAL_REPO is set (test/support/memwal-mcp-package.ts).
import { randomUUID } from "node:crypto";
import { memwalMcpChecks } from "../support/memwal-mcp-package.ts";
import type { CompatDriver } from "./rows.ts";

export const memwalMcpPackage: CompatDriver = (ctx) =>
  memwalMcpChecks({ memwalRepo: ctx.memwalRepo, credentials: ctx.credentials, namespace: `compat-${randomUUID().slice(0, 8)}` });
