// The OAuth aggregates on the event log: a client's and a grant's current state is the last event on its subject
// (each event carries the whole state, hashes only), read straight from JetStream so no decision waits for a read
// model; appends expect the sequence they decided on, so a code or a refresh token is spent once under concurrency.
import type { EventLog } from "../../eventlog/connection.ts";
import { ConcurrencyConflict, EventStore } from "../../eventlog/event-store.ts";
import { lastCommit } from "../../eventlog/command-bus.ts";
import { aggregateEventSubject } from "../../eventlog/subjects.ts";
import { OAUTH_EVENTS, OAuthError, clientAggregate, grantAggregate, isOAuthEvent, oauthEvent, type GrantEventType, type GrantState, type OAuthClientState, type OAuthEventData } from "../../schemas/relayer/oauth.ts";

export class OAuthStore {
  private readonly store: EventStore<OAuthEventData>;

  constructor(private readonly log: EventLog) {
    this.store = new EventStore(log.js, log.jsm);
  }

  async client(clientId: string): Promise<OAuthClientState | undefined> {
    const c = await lastCommit(this.log, aggregateEventSubject(clientAggregate(clientId)));
    const last = c?.events.at(-1);
    return last && isOAuthEvent(last) && last.type === OAUTH_EVENTS.clientRegistered ? last.data : undefined;
  }

  async registerClient(client: OAuthClientState): Promise<void> {
    await this.store.append(clientAggregate(client.client_id), [oauthEvent(OAUTH_EVENTS.clientRegistered, client)], 0, { causationId: client.client_id, correlationId: client.client_id });
  }

  async grant(grantId: string): Promise<{ state: GrantState; seq: number } | undefined> {
    const c = await lastCommit(this.log, aggregateEventSubject(grantAggregate(grantId)));
    const last = c?.events.at(-1);
    return c && last && isOAuthEvent(last) && last.type !== OAUTH_EVENTS.clientRegistered ? { state: last.data.state, seq: c.seq } : undefined;
  }

  /** Appends the grant's next state as `type`, expecting `seq` (0 for a new grant). */
  async save(type: GrantEventType, state: GrantState, seq: number): Promise<void> {
    try {
      await this.store.append(grantAggregate(state.grant_id), [oauthEvent(type, { state })], seq, { causationId: state.grant_id, correlationId: state.grant_id });
    } catch (err) {
      // Someone else moved the grant first (a concurrent exchange of the same code or refresh token): this one loses.
      if (err instanceof ConcurrencyConflict) throw new OAuthError("invalid_grant", "the grant changed concurrently; the code or token was already used");
      throw err;
    }
  }

  /** Decides on the current state and appends the result; the decision may throw an OAuthError. */
  async decide(grantId: string, type: GrantEventType, decide: (g: GrantState) => GrantState | undefined): Promise<GrantState | undefined> {
    const current = await this.grant(grantId);
    if (!current) throw new OAuthError("invalid_grant", "unknown grant");
    const next = decide(current.state);
    if (next) await this.save(type, next, current.seq);
    return next;
  }
}
