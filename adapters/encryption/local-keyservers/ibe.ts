// Key-server side of Seal's Boneh-Franklin IBE over BLS12-381, written against @noble/curves.
//
// Protocol facts (they must match what @mysten/seal computes on the client):
//   master public key  mpk = msk · G2                          (96-byte compressed G2)
//   identity point     Q_id = hash_to_G1("SUI-SEAL-IBE-BLS12381-00" ‖ full_id)   (noble's default G1 hash DST)
//   user secret key    usk = msk · Q_id                        (48-byte compressed G1)
//   full id            package id (32 bytes) ‖ inner id
//   transport          ElGamal in G1 to the request's ephemeral key: (r·G1, usk + r·encPk); the client computes
//                      c1 − sk·c0
//   proof of possession BLS short signature (G1) of "SUI-SEAL-IBE-BLS12381-POP-00" ‖ mpk ‖ key-server object id

import { bls12_381 } from "@noble/curves/bls12-381.js";
import { concatBytes } from "@noble/hashes/utils.js";

const ORDER = bls12_381.fields.Fr.ORDER;
const IBE_DST = new TextEncoder().encode("SUI-SEAL-IBE-BLS12381-00");
const POP_DST = new TextEncoder().encode("SUI-SEAL-IBE-BLS12381-POP-00");

type G1Point = ReturnType<typeof bls12_381.G1.Point.fromBytes>;

function scalarOf(bytes: Uint8Array): bigint {
  if (bytes.length !== 32) throw new Error("master key must be 32 bytes");
  const s = BigInt("0x" + Buffer.from(bytes).toString("hex"));
  if (s <= 0n || s >= ORDER) throw new Error("master key out of range");
  return s;
}

function randomScalar(): bigint {
  return scalarOf(bls12_381.utils.randomSecretKey());
}

/** A fresh master secret key: 32 bytes, big-endian scalar in [1, r). */
export function generateMasterKey(): Uint8Array {
  return bls12_381.utils.randomSecretKey();
}

/** The IBE master public key (compressed G2, 96 bytes) of a master secret key. */
export function masterPublicKey(masterKey: Uint8Array): Uint8Array {
  return bls12_381.G2.Point.BASE.multiply(scalarOf(masterKey)).toBytes();
}

function identityPoint(fullId: Uint8Array): G1Point {
  return bls12_381.G1.Point.fromAffine(bls12_381.G1.hashToCurve(concatBytes(IBE_DST, fullId)).toAffine());
}

/** Derives the user secret key for `fullId` (package id ‖ inner id). */
export function deriveUserSecretKey(masterKey: Uint8Array, fullId: Uint8Array): G1Point {
  return identityPoint(fullId).multiply(scalarOf(masterKey));
}

/** Parses an ElGamal public key (compressed G1); throws on invalid or identity points. */
export function parseElGamalPublicKey(bytes: Uint8Array): G1Point {
  const p = bls12_381.G1.Point.fromBytes(bytes);
  p.assertValidity();
  if (p.is0()) throw new Error("identity point");
  return p;
}

/** ElGamal-encrypts a G1 point to `encPk`: returns [r·G1, point + r·encPk] as compressed G1 bytes. */
export function elgamalEncrypt(encPk: G1Point, point: G1Point): [Uint8Array, Uint8Array] {
  const r = randomScalar();
  return [bls12_381.G1.Point.BASE.multiply(r).toBytes(), point.add(encPk.multiply(r)).toBytes()];
}

/** Proof of possession for GET /v1/service: BLS short signature over POP_DST ‖ mpk ‖ object id. */
export function proofOfPossession(masterKey: Uint8Array, objectId: string): Uint8Array {
  const pk = masterPublicKey(masterKey);
  const idBytes = Buffer.from(objectId.replace(/^0x/, "").padStart(64, "0"), "hex");
  const msg = bls12_381.shortSignatures.hash(concatBytes(POP_DST, pk, idBytes));
  return bls12_381.shortSignatures.sign(msg, masterKey).toBytes();
}
