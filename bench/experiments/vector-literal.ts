// Experiment: building pgvector text literals (db/pool.ts toVectorLiteral) vs faster forms.
//   node --import tsx bench/experiments/vector-literal.ts
import { toVectorLiteral } from "../../db/pool.ts";
import { HashingEmbedder } from "../../adapters/embeddings/hashing.ts";
import { memoryTexts } from "../lib/texts.ts";
const e = new HashingEmbedder();
const f32 = memoryTexts(2000, 0).map((t) => e.embedOne(t));
const arrs = f32.map((v) => Array.from(v));
const time = (label: string, fn: () => unknown) => { const t = performance.now(); fn(); console.log(label, (performance.now() - t).toFixed(0), "ms / 2000"); };
for (let r = 0; r < 2; r++) {
time("toVectorLiteral(number[])", () => arrs.map((v) => toVectorLiteral(v)));
time("toVectorLiteral(Float32Array)", () => f32.map((v) => toVectorLiteral(v)));
time("'[' + join + ']' number[]", () => arrs.map((v) => "[" + v.join(",") + "]"));
time("zero fast path", () => arrs.map((v) => { let s = "["; for (let i = 0; i < v.length; i++) { const x = v[i]; s += i ? (x === 0 ? ",0" : "," + x) : String(x); } return s + "]"; }));
time("parts array + join w/ zero fast path", () => arrs.map((v) => { const p = new Array(v.length); for (let i = 0; i < v.length; i++) { const x = v[i]; p[i] = x === 0 ? "0" : String(x); } return "[" + p.join(",") + "]"; }));
time("toPrecision(5) zeros fast", () => arrs.map((v) => { const p = new Array(v.length); for (let i = 0; i < v.length; i++) { const x = v[i]; p[i] = x === 0 ? "0" : x.toPrecision(5); } return "[" + p.join(",") + "]"; }));
}
const nz = arrs[0].filter((x) => x !== 0).length;
console.log("nonzeros in first vector", nz, "of", arrs[0].length);
