#!/usr/bin/env node
// Entry point of the `memrelay-mcp` stdio tool package: runs the TypeScript through tsx's loader (no build step).
import { register } from "tsx/esm/api";

register();
const { main } = await import("../mcp/stdio/main.ts");
process.exitCode = await main(process.argv.slice(2));
