// The OAuth read model: registered clients and grants (status, account, why revoked), for operators and for a
// dashboard listing. Decisions never read it (they read each aggregate's last event); it holds no token, code or key.
import type { Projection } from "../runtime.ts";
import type { Db, Tx } from "../../db/pool.ts";
import { eventFilter } from "../../eventlog/subjects.ts";
import { OAUTH, OAUTH_EVENTS, type OAuthEvent } from "../../schemas/relayer/oauth.ts";

export const OAUTH_PROJECTION = "oauth";

export const oauthProjection: Projection<OAuthEvent> = {
  name: OAUTH_PROJECTION,
  filter: eventFilter(OAUTH),
  migrate: async (db: Db) => {
    await db.query(`CREATE TABLE IF NOT EXISTS oauth_clients (
      client_id uuid PRIMARY KEY, client_name text NOT NULL, redirect_uris text[] NOT NULL, created_at timestamptz NOT NULL)`);
    await db.query(`CREATE TABLE IF NOT EXISTS oauth_grants (
      grant_id uuid PRIMARY KEY, client_id uuid NOT NULL, account_id text, status text NOT NULL, scope text NOT NULL,
      revoked_reason text, updated_at timestamptz NOT NULL)`);
  },
  reset: async (tx: Tx) => {
    await tx.query("TRUNCATE oauth_clients, oauth_grants");
  },
  apply: async (tx: Tx, events) => {
    for (const { event } of events) {
      if (event.type === OAUTH_EVENTS.clientRegistered) {
        const c = event.data;
        await tx.query("INSERT INTO oauth_clients (client_id, client_name, redirect_uris, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (client_id) DO NOTHING", [c.client_id, c.client_name, c.redirect_uris, c.created_at]);
      } else {
        const g = event.data.state;
        await tx.query(
          `INSERT INTO oauth_grants (grant_id, client_id, account_id, status, scope, revoked_reason, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT (grant_id) DO UPDATE SET account_id = EXCLUDED.account_id, status = EXCLUDED.status, revoked_reason = EXCLUDED.revoked_reason, updated_at = EXCLUDED.updated_at`,
          [g.grant_id, g.client_id, g.account_id ?? null, g.status, g.scope, g.revoked_reason ?? null, event.occurred_at],
        );
      }
    }
  },
};
