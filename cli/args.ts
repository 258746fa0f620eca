// What the operator commands share: option parsing and where their output goes (tests pass their own sink).

export interface CommandIo {
  out(line: string): void;
  err(line: string): void;
}

export const processIo: CommandIo = {
  out: (l) => process.stdout.write(l + "\n"),
  err: (l) => process.stderr.write(l + "\n"),
};

/** The value of `--name value` or `--name=value`. */
export function flag(args: readonly string[], name: string): string | undefined {
  const i = args.indexOf(name);
  if (i >= 0) return args[i + 1];
  const eq = args.find((a) => a.startsWith(name + "="));
  return eq?.slice(name.length + 1);
}

/** What a command that needs the database says when DATABASE_URL is missing. */
export const NO_DATABASE_URL =
  "DATABASE_URL is not set and no running `memrelay start` was found in the data directory (MEMRELAY_DATA_DIR, default ~/.memrelay): start one, point MEMRELAY_DATA_DIR at its data directory, or copy the DATABASE_URL= line it prints";
