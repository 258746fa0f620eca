// A listener that cannot bind names the operator variable that picks its address: a second stack on one machine
// otherwise stops at "EADDRINUSE 127.0.0.1:9000" with nothing saying which setting to change.
export function namingAddressVariable(variable: string, freeHint = "0 takes any free port"): (err: unknown) => never {
  return (err) => {
    throw new Error(`${err instanceof Error ? err.message : String(err)}: set ${variable} to a free port (${freeHint})`);
  };
}
