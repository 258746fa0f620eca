// What the console benchmark's measurements share (made by runConsoleBench, bench/console/run.ts): one user with a
// read-write key and its personal space, a console client on the bench's connection pool, and a pool on the
// benchmark's database.
import type { Db } from "../../db/pool.ts";
import type { MintedKey, SignedUp } from "../../actors/console/directory.ts";
import type { ConsoleClient } from "../../client/console-client.ts";

export interface BenchSession {
  readonly say: (line: string) => void;
  readonly db: Db;
  readonly user: SignedUp;
  readonly key: MintedKey;
  readonly c: ConsoleClient;
  readonly spaceId: string;
}
