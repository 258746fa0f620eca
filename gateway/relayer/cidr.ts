// Whether an address is inside one of a list of CIDR ranges (IPv4 and IPv6), for exemptions such as
// MCP_OAUTH_REGISTRATION_TRUSTED_CIDRS. A malformed range matches nothing.
import { isIPv4, isIPv6 } from "node:net";

function bitsOf(ip: string): bigint | undefined {
  if (isIPv4(ip)) return ip.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
  if (!isIPv6(ip)) return undefined;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(ip);
  let text = ip;
  if (v4) {
    const b = bitsOf(v4[1])!;
    text = ip.slice(0, ip.length - v4[1].length) + `${(b >> 16n).toString(16)}:${(b & 0xffffn).toString(16)}`;
  }
  const [head, tail] = text.split("::");
  const h = head ? head.split(":") : [];
  const t = tail !== undefined ? (tail ? tail.split(":") : []) : [];
  const groups = tail !== undefined ? [...h, ...Array(8 - h.length - t.length).fill("0"), ...t] : h;
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g || "0", 16)), 0n);
}

export function ipInCidrs(ip: string, cidrs: readonly string[]): boolean {
  const addr = bitsOf(ip);
  if (addr === undefined) return false;
  const width = isIPv4(ip) ? 32 : 128;
  return cidrs.some((c) => {
    const [net, lenText] = c.trim().split("/");
    const base = bitsOf(net);
    const len = Number(lenText ?? width);
    if (base === undefined || (isIPv4(net) ? 32 : 128) !== width || !Number.isInteger(len) || len < 0 || len > width) return false;
    const shift = BigInt(width - len);
    return addr >> shift === base >> shift;
  });
}
