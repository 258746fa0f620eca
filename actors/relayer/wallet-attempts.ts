// Which failures of a store or record attempt spend one of the job's wallet attempts. The ports (the publisher, the
// chain, the record batcher) report theirs as a PortError or a RecordFailed: a publisher or chain that keeps refusing
// or failing fails the job after its attempts, with the reason. An outage of the relayer's own backing services (the
// event log a quilt is sealed in, the database) is nobody's wallet: the host retries the effect until it passes,
// without spending attempts (issue 32's chaos run: a NATS leader election failed three jobs "after 5 wallet attempts").
import { PortError } from "../../adapters/ports.ts";
import { RecordFailed } from "../../adapters/chain/record-batcher.ts";
import { isUnavailable } from "../../adapters/unavailable.ts";

export const spendsWalletAttempt = (failure: unknown): boolean =>
  failure instanceof PortError || failure instanceof RecordFailed || !isUnavailable(failure);
