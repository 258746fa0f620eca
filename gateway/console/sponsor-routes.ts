// The console's sponsorship routes (spec/console.md): reserve a sponsored transaction for the caller to sign, then
// execute it with the sponsor's co-signature.
import { decodePathParam, json } from "../http.ts";
import { TX_CLOCK_SKEW_MS } from "../../adapters/chain/sui/transaction-envelope.ts";
import type { StoredObject as ChainObject } from "../../schemas/chain.ts";
import { AGG, CMD, EV, type SponsorExecuted, type SponsorReserved } from "../../schemas/console/events.ts";
import { parseJsonObject } from "../http.ts";
import { CODE, CONSOLE_LIMITS, ConsoleHttpError, badRequest, notFound, parseSignatureBody, parseSponsor } from "../../schemas/console/http.ts";
import { consoleCommand } from "../../schemas/console/commands.ts";
import { requireWrite, type Principal } from "./auth.ts";
import { buildSponsoredTx } from "../../actors/console/chain.ts";
import { SPONSOR, executeSponsored, groupPolicy } from "../../actors/console/sponsor.decider.ts";
import { orThrow } from "../../actors/console/errors.ts";
import { sponsorshipUnknown } from "./domain-errors.ts";
import { type ConsoleRouteKit } from "./route-kit.ts";

export function registerSponsorRoutes(kit: ConsoleRouteKit): void {
  const { server, authed, clog, chain, policies, sponsor, limits, settle, scopeBucket } = kit;
  // ---------------------------------------------------------------- sponsorship

  const groupBucket = async (p: Principal, groupId: string) => {
    const g = await policies.group(groupId);
    if (!g) throw notFound(`access group ${groupId} not found`);
    const b = await scopeBucket(p, g.bucket_id);
    return b.bucket_id;
  };

  server.route("post", "/encryption/sponsor", authed("POST /encryption/sponsor", async (req, p) => {
    requireWrite(p);
    if (!p.serviceAddress) throw badRequest("this API key has no service key to sign with");
    const body = parseSponsor(parseJsonObject(req.body));
    let built: { kind: SponsorReserved["kind"]; bucketIds: string[]; tx: { bytes: string; digest: string } };
    const base = { target: chain.target, sender: p.serviceAddress, sponsorAddress: sponsor.address };
    switch (body.kind) {
      case "bucket_group_create": {
        const b = await scopeBucket(p, body.bucketId);
        const policyId = orThrow(groupPolicy(b));
        built = { kind: body.kind, bucketIds: [b.bucket_id], tx: buildSponsoredTx({ ...base, kind: "bucket_group_create", args: { policy_id: policyId, bucket_id: b.bucket_id } }) };
        break;
      }
      case "grant_bucket_access": {
        const ids = [...new Set(await Promise.all(body.groupIds.map((g) => groupBucket(p, g))))];
        built = { kind: body.kind, bucketIds: ids, tx: buildSponsoredTx({ ...base, kind: "grant_bucket_access", args: { group_ids: body.groupIds, recipient: body.recipientAddress, scope: body.scope } }) };
        break;
      }
      case "share_admin":
      case "unshare": {
        const id = await groupBucket(p, body.groupId);
        built = { kind: body.kind, bucketIds: [id], tx: buildSponsoredTx({ ...base, kind: body.kind, args: { group_id: body.groupId, member: body.member } }) };
        break;
      }
      case "unshare_bucket_access": {
        const id = await groupBucket(p, body.groupId);
        built = { kind: body.kind, bucketIds: [id], tx: buildSponsoredTx({ ...base, kind: "unshare_bucket_access", args: { group_id: body.groupId, service_signer: body.serviceSignerAddress } }) };
        break;
      }
    }
    const now = Date.now();
    const data: SponsorReserved = {
      digest: built.tx.digest,
      kind: built.kind,
      tx_bytes: built.tx.bytes,
      sender: p.serviceAddress,
      key_id: p.keyId,
      user_id: p.userId,
      bucket_ids: built.bucketIds,
      reserved_at: new Date(now).toISOString(),
      expires_at: new Date(now + Math.min(limits.sponsorTtlMs, TX_CLOCK_SKEW_MS)).toISOString(),
    };
    await clog.dispatch(built.tx.digest, consoleCommand(CMD.sponsorReserve, data), (e) => (e.type === EV.sponsorReserved ? true : undefined));
    return json(200, { bytes: built.tx.bytes, digest: built.tx.digest });
  }), { bodyLimit: CONSOLE_LIMITS.jsonBody });

  server.route("post", "/encryption/sponsor/:digest/execute", authed("POST /encryption/sponsor/{digest}/execute", async (req, p) => {
    requireWrite(p);
    const digest = decodePathParam(req.params[0]) ?? "";
    const unknown = () => sponsorshipUnknown(digest);
    if (!/^[1-9A-HJ-NP-Za-km-z]{32,64}$/.test(digest)) throw unknown();
    const signature = parseSignatureBody(parseJsonObject(req.body));
    const { events } = await clog.store.load(`${AGG.sponsor}.${digest}`);
    const state = events.reduce((s, { event }) => SPONSOR.evolve(s, event), SPONSOR.initial);
    const { executed } = orThrow(executeSponsored({ digest, userId: p.userId, signature })(state));
    if (executed) return json(200, executedJson(executed));
    const r = await clog.dispatch(
      digest,
      consoleCommand(CMD.sponsorExecute, { signature, requested_at: new Date().toISOString() }),
      (e) => (e.type === EV.sponsorExecuted || e.type === EV.sponsorFailed || e.type === EV.sponsorExpired ? e : undefined),
      30_000,
    );
    const e = r.value;
    if (e.type === EV.sponsorExpired) throw unknown();
    if (e.type === EV.sponsorFailed) {
      const f = e.data;
      throw new ConsoleHttpError(f.kind === "forbidden" ? 403 : 400, `the transaction was refused: ${f.error}`, f.code === CODE.invalidSignature ? CODE.badRequest : f.code);
    }
    await settle(r.seq);
    return json(200, executedJson(e.data));
  }), { bodyLimit: CONSOLE_LIMITS.jsonBody });

  const executedJson = (x: SponsorExecuted) => ({
    digest: x.chain_digest,
    objectChanges: x.objects.map((o: ChainObject) => ({ objectId: o.object_id, objectType: o.type, version: o.version })),
  });
}
