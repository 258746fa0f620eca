// Summarises a V8 .cpuprofile (from `bench/run.ts --cpu-prof`): self time by function and by package/file, and
// inclusive time of the heaviest frames.
//   node --import tsx bench/profile-summary.ts bench/profiles/<file>.cpuprofile [top] [--callers X] [--window A-B]
// --window A-B: only the samples taken from A to B seconds after the profile started (one phase of a section; the
// file name carries the process's start time, the bench log each phase's).
import { readFileSync } from "node:fs";

interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number; children?: number[] }
interface Profile { nodes: Node[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] }

const file = process.argv[2];
const top = Number(process.argv[3] ?? 30);
/** --callers <substring>: the stacks (5 frames up) that lead to functions whose label contains it, by time. */
const callersOf = process.argv.includes("--callers") ? process.argv[process.argv.indexOf("--callers") + 1] : undefined;
if (!file) {
  console.error("usage: profile-summary.ts <file.cpuprofile> [top]");
  process.exit(2);
}
const windowArg = process.argv.includes("--window") ? process.argv[process.argv.indexOf("--window") + 1] : undefined;
const [fromUs, toUs] = windowArg ? windowArg.split("-").map((x) => Number(x) * 1e6) : [0, Number.POSITIVE_INFINITY];
const p = JSON.parse(readFileSync(file, "utf8")) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
let atUs = 0;
for (let i = 0; i < p.samples.length; i++) {
  atUs += p.timeDeltas[i] ?? 0;
  if (atUs >= fromUs && atUs <= toUs) selfUs.set(p.samples[i], (selfUs.get(p.samples[i]) ?? 0) + (p.timeDeltas[i] ?? 0));
}
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

const short = (url: string) => {
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + 13).split("/");
    return rest[0].startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  return url.replace(/^file:\/\/\/work\/main\//, "").replace(/^node:/, "node:") || "(native/vm)";
};
const label = (n: Node) => `${n.callFrame.functionName || "(anonymous)"} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;

const fn = new Map<string, number>();
const pkg = new Map<string, number>();
for (const [id, us] of selfUs) {
  const n = byId.get(id)!;
  fn.set(label(n), (fn.get(label(n)) ?? 0) + us);
  const k = n.callFrame.url ? short(n.callFrame.url) : n.callFrame.functionName;
  pkg.set(k, (pkg.get(k) ?? 0) + us);
}
// Inclusive time per function label (counted once per stack).
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const incl = new Map<string, number>();
for (const [id, us] of selfUs) {
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const l = label(byId.get(cur)!);
    if (seen.has(l)) continue;
    seen.add(l);
    incl.set(l, (incl.get(l) ?? 0) + us);
  }
}
const print = (title: string, m: Map<string, number>, n = top) => {
  console.log(`\n${title}`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n)) console.log(`${((v / total) * 100).toFixed(1).padStart(6)} %  ${(v / 1000).toFixed(0).padStart(7)} ms  ${k}`);
};
if (callersOf) {
  const stacks = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const chain: string[] = [];
    let hit = false;
    for (let cur: number | undefined = id; cur !== undefined && chain.length < 40; cur = parent.get(cur)) {
      const l = label(byId.get(cur)!);
      if (!hit && l.includes(callersOf)) hit = true;
      if (hit) chain.push(l);
    }
    if (hit) {
      const key = chain.slice(0, Number(process.env.DEPTH ?? 8)).join("  <  ");
      stacks.set(key, (stacks.get(key) ?? 0) + us);
    }
  }
  for (const [k, v] of [...stacks].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`${(v / 1000).toFixed(0).padStart(7)} ms  ${k}`);
  process.exit(0);
}
console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled over ${((p.endTime - p.startTime) / 1e6).toFixed(1)} s wall`);
print("self time by file / package", pkg, 25);
print("self time by function", fn);
print("inclusive time by function", incl, top);
