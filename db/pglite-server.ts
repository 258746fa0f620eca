// Embedded PGlite served over the Postgres wire protocol to the services' connection pools (`memrelay start` without
// a native Postgres). PGlite is one session, so connections take turns, and a turn is a whole exchange: the
// messages a client sends up to a synchronisation point (Sync, a simple Query, Flush, Terminate) run together.
// `@electric-sql/pglite-socket` 0.2.17 interleaved single messages of different connections, so one connection's
// Parse replaced another's unnamed statement between its Parse and its Bind ("unnamed prepared statement does not
// exist"), and remember jobs never finished. While a connection holds a transaction open, only it gets turns; a
// connection that closes inside one has it rolled back. Named statements are shared by all connections of the one
// session: pools use none (db/pool.ts, `prepared_statements=off` in the URL this server's callers are given).
import { createServer, type Server, type Socket } from "node:net";
import type { PGlite } from "@electric-sql/pglite";

const SSL_REQUEST = 80877103;
const CANCEL_REQUEST = 80877102;
const PROTOCOL_3 = 196608;
/** Message types after which a client waits for the server: Sync, Query, Flush, Terminate. */
const SYNC_POINTS = new Set(["S", "Q", "H", "X"].map((c) => c.charCodeAt(0)));

interface Turn {
  readonly conn: number;
  /** the exchange's messages; none for the turn that ends a closed connection (rolling back its transaction) */
  readonly messages: readonly Uint8Array[];
  readonly reply: (bytes: Uint8Array) => void;
  /** the exchange failed inside PGlite: the connection is dropped */
  readonly fail: () => void;
}

export interface PgliteServer {
  readonly port: number;
  stop(): Promise<void>;
}

export async function servePglite(db: PGlite, host: string, port: number): Promise<PgliteServer> {
  const queue: Turn[] = [];
  /** The connection whose transaction is open (only its turns run), if any. */
  let owner: number | undefined;
  let running = false;
  let nextConn = 1;
  const sockets = new Set<Socket>();

  const run = async () => {
    if (running) return;
    running = true;
    try {
      for (;;) {
        if (db.closed) {
          queue.length = 0;
          break;
        }
        const i = owner === undefined ? 0 : queue.findIndex((t) => t.conn === owner);
        if (i < 0 || !queue.length) break;
        const [turn] = queue.splice(i, 1);
        // (a connection's turn runs inside a transaction only if that connection opened it; exec takes PGlite's
        // lock itself, which is not reentrant)
        if (!turn.messages.length) {
          if (db.isInTransaction()) await db.exec("ROLLBACK").catch(turn.fail);
        } else {
          await db
            .runExclusive(async () => {
              for (const m of turn.messages) await db.execProtocolRawStream(m, { onRawData: turn.reply });
            })
            .catch(turn.fail);
        }
        owner = db.isInTransaction() ? turn.conn : undefined;
      }
    } finally {
      running = false;
    }
  };

  /** A closed connection's exchanges are dropped, and its last turn rolls back the transaction it may hold. */
  const closed = (conn: number) => {
    for (let i = queue.length - 1; i >= 0; i--) if (queue[i].conn === conn) queue.splice(i, 1);
    queue.push({ conn, messages: [], reply: () => undefined, fail: () => undefined });
    void run();
  };

  const server: Server = createServer((socket) => {
    const conn = nextConn++;
    sockets.add(socket);
    socket.setNoDelay(true);
    let buffered: Buffer = Buffer.alloc(0);
    let started = false;
    let pending: Uint8Array[] = [];
    const reply = (bytes: Uint8Array) => void (socket.writable && socket.write(bytes));
    const fail = () => void socket.destroy();
    socket.on("data", (chunk: Buffer) => {
      buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
      for (;;) {
        // Before startup: SSLRequest (answered "no"), CancelRequest (not supported), StartupMessage (no type byte).
        if (!started) {
          if (buffered.length < 8) return;
          const len = buffered.readInt32BE(0);
          if (buffered.length < len) return;
          const code = buffered.readInt32BE(4);
          const message = buffered.subarray(0, len);
          buffered = buffered.subarray(len);
          if (code === SSL_REQUEST) socket.write("N");
          else if (code === CANCEL_REQUEST) return void socket.end();
          else if (code === PROTOCOL_3) {
            started = true;
            queue.push({ conn, messages: [new Uint8Array(message)], reply, fail });
            void run();
          } else return void socket.destroy();
          continue;
        }
        if (buffered.length < 5) return;
        const len = 1 + buffered.readInt32BE(1);
        if (buffered.length < len) return;
        const type = buffered[0];
        pending.push(new Uint8Array(buffered.subarray(0, len)));
        buffered = buffered.subarray(len);
        if (SYNC_POINTS.has(type)) {
          queue.push({ conn, messages: pending, reply, fail });
          pending = [];
          void run();
        }
      }
    });
    socket.on("error", () => undefined);
    socket.on("close", () => {
      sockets.delete(socket);
      closed(conn);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : port,
    stop: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
