// pgvector `halfvec` in Postgres's binary wire format. node-postgres sends a Buffer parameter as binary, so a vector
// reaches Postgres as 2 bytes per dimension instead of a decimal literal of ~20 characters per dimension: formatting
// those literals was most of the CPU of indexing (replay) and a large share of a recall's.
//
// Conversion matches halfvec_in on the text path: the double is rounded to float32 (strtof), then to half precision
// with round-to-nearest-even (pgvector's Float4ToHalf), so both paths store the same bits.

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** IEEE 754 binary16 bits of `x`, rounded as pgvector does; throws for values a halfvec cannot hold. */
export function toHalfBits(x: number): number {
  f32[0] = x;
  return halfOfFloat32Bits(u32[0], x);
}

/** binary16 bits of a float32 given by its bits `b` (`x`: the value it came from, for errors and −0). */
function halfOfFloat32Bits(b: number, x: number): number {
  if (x === 0) return 0; // −0 as +0, as decimal literals written from JavaScript ("" + -0 is "0") always stored it
  const sign = (b >>> 16) & 0x8000;
  const exp = (b >>> 23) & 0xff;
  const mant = b & 0x7fffff;
  if (exp === 0xff) throw new RangeError(mant ? "NaN not allowed in halfvec" : "infinite value not allowed in halfvec");
  const e = exp - 127 + 15;
  let h: number;
  if (e <= 0) {
    // Subnormal (or zero) in half precision: value = m · 2^-24.
    if (e < -10) return sign;
    const m = mant | 0x800000;
    const shift = 14 - e;
    h = m >>> shift;
    const rem = m & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rem > halfway || (rem === halfway && h & 1)) h++;
  } else {
    h = (e << 10) | (mant >>> 13);
    const rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem === 0x1000 && h & 1)) h++; // a carry into the exponent is the correct rounding
  }
  if (e >= 0x1f || (h & 0x7c00) === 0x7c00) throw new RangeError(`${x} is out of range for type halfvec`);
  return sign | h;
}

/** One halfvec value: int16 dimensions, int16 unused (0), then each dimension as big-endian binary16. */
export function halfvecBinary(v: ArrayLike<number>): Buffer {
  const n = v.length;
  const out = Buffer.allocUnsafe(4 + 2 * n);
  out[0] = (n >>> 8) & 0xff;
  out[1] = n & 0xff;
  out[2] = 0;
  out[3] = 0;
  // Rounded to float32 in one native pass (strtof's step), then each to half precision; bytes stored directly (the
  // checked Buffer writers were a large share of a replay's CPU).
  const f = Float32Array.from(v);
  const bits = new Uint32Array(f.buffer, f.byteOffset, n);
  for (let i = 0, o = 4; i < n; i++, o += 2) {
    const h = halfOfFloat32Bits(bits[i], v[i]);
    out[o] = h >>> 8;
    out[o + 1] = h & 0xff;
  }
  return out;
}

/** A one-dimensional halfvec[] (no nulls) in the binary array format; `elementOid` is halfvec's type oid. */
export function halfvecArrayBinary(elementOid: number, values: readonly Buffer[]): Buffer {
  let size = 20;
  for (const v of values) size += 4 + v.length;
  const out = Buffer.allocUnsafe(size);
  out.writeInt32BE(1, 0); // dimensions
  out.writeInt32BE(0, 4); // has nulls
  out.writeUInt32BE(elementOid, 8);
  out.writeInt32BE(values.length, 12);
  out.writeInt32BE(1, 16); // lower bound
  let at = 20;
  for (const v of values) {
    out.writeInt32BE(v.length, at);
    v.copy(out, at + 4);
    at += 4 + v.length;
  }
  return out;
}
