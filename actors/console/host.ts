// The console's actors run on the shared actor host (actors/host.ts), unchanged. Console aggregate types are
// hierarchical (`console.bucket`), so their subjects share the prefix `evt.console.` and one projection follows the
// whole console with a single filter (nats-server 2.9 allows one per consumer); a JetStream durable name may not
// contain '.', so the consumer is named with '_' instead — the only thing this subclass changes.
import { ActorHost } from "../host.ts";
import type { CommandEnvelope } from "../../schemas/envelope.ts";
import type { ConsoleCommand } from "../../schemas/console/commands.ts";

export class ConsoleActorHost<Cmd extends CommandEnvelope = ConsoleCommand> extends ActorHost<Cmd> {
  override get consumerName(): string {
    return `actor-${super.consumerName.slice("actor-".length).replace(/\./g, "_")}`;
  }
}
