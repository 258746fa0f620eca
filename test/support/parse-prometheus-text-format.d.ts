// The parser ships without types; the shape is prom2json's.
declare module "parse-prometheus-text-format" {
  interface Sample {
    readonly labels?: Record<string, string>;
    readonly value?: string;
    readonly buckets?: Record<string, string>;
    readonly count?: string;
    readonly sum?: string;
  }
  interface Family {
    readonly name: string;
    readonly help: string;
    readonly type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED";
    readonly metrics: readonly Sample[];
  }
  export default function parsePrometheusTextFormat(text: string): Family[];
}
