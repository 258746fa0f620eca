// Reads a histogram's sum and count from the gateway's Prometheus /metrics (server-side time, for comparison with
// what the load generator observes).
import { request } from "undici";

export async function scrapeHistogram(baseUrl: string, name: string, labels = ""): Promise<{ sum: number; n: number }> {
  const res = await request(`${baseUrl}/metrics`);
  const text = await res.body.text();
  const sel = labels ? `{${labels}}` : "";
  const num = (suffix: string) => {
    const line = text.split("\n").find((l) => l.startsWith(`${name}_${suffix}${sel} `));
    return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : 0;
  };
  return { sum: num("sum"), n: num("count") };
}

export const meanMsBetween = (a: { sum: number; n: number }, b: { sum: number; n: number }) => (b.n > a.n ? ((b.sum - a.sum) / (b.n - a.n)) * 1000 : NaN);
