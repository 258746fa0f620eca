// The envelope encryption's side of Seal (adapters/encryption/envelope.ts): SealClients over the configured key
// servers, and Seal's errors as the port's errors.
import {
  ExpiredSessionKeyError,
  InvalidMVRNameError,
  InvalidPackageError,
  InvalidPersonalMessageSignatureError,
  InvalidSessionKeySignatureError,
  InvalidUserSignatureError,
  NoAccessError,
  SealClient,
  UnsupportedPackageIdError,
  type KeyServerConfig,
  type SealCompatibleClient,
} from "@mysten/seal";
import { PortError } from "../ports.ts";

export const PORT = "encryption";
/** Key-server error codes that mean "this credential may not have these keys". */
const REFUSALS = new Set(["NoAccess", "InvalidSignature", "InvalidSessionSignature", "InvalidCertificate", "InvalidPackage", "UnsupportedPackageId", "InvalidMVRName"]);

/** What every SealClient of one envelope encryption is built from (as in EnvelopeEncryptionOptions). */
export interface SealSettings {
  readonly sui: SealCompatibleClient;
  readonly serverConfigs: readonly KeyServerConfig[];
  readonly timeoutMs?: number;
  readonly fetch?: typeof fetch;
}

export function newSealClient(settings: SealSettings, verify: boolean, onRefusal?: () => void): SealClient {
  const base = settings.fetch ?? globalThis.fetch;
  // With one server down and one refusing, the SDK may report the outage as the "majority" error; counting
  // authorization refusals on the wire lets a refused credential surface as forbidden, not unavailable.
  const fetchFn: typeof fetch | undefined = onRefusal
    ? async (input, init) => {
        const r = await base(input, init);
        if (r.status === 403) {
          try {
            const code = ((await r.clone().json()) as { error?: unknown }).error;
            if (typeof code === "string" && REFUSALS.has(code)) onRefusal();
          } catch {
            // not a Seal error body
          }
        }
        return r;
      }
    : settings.fetch;
  return new SealClient({
    suiClient: settings.sui,
    serverConfigs: settings.serverConfigs.map((s) => ({ ...s })),
    verifyKeyServers: verify,
    timeout: settings.timeoutMs ?? 10_000,
    fetch: fetchFn,
  });
}

export function mapSealError(e: unknown, what: string): PortError {
  if (e instanceof PortError) return e;
  if (
    e instanceof NoAccessError ||
    e instanceof ExpiredSessionKeyError ||
    e instanceof InvalidUserSignatureError ||
    e instanceof InvalidSessionKeySignatureError ||
    e instanceof InvalidPersonalMessageSignatureError ||
    e instanceof InvalidPackageError ||
    e instanceof UnsupportedPackageIdError ||
    e instanceof InvalidMVRNameError
  ) {
    return new PortError(PORT, "forbidden", `${what}: key servers refused (${e.constructor.name})`);
  }
  return new PortError(PORT, "unavailable", `${what}: ${e instanceof Error ? e.constructor.name : "error"}`);
}
