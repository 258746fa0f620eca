// The console's command catalogue: the data of each command type (schemas/console/events.ts `CMD`), the aggregate it
// addresses, and a typed constructor. The gateway's routes and the operator CLI build commands with `consoleCommand`;
// the console's actors decide on `ConsoleCommand`, so a command's data is typed by its type wherever it is read.
import { commandsOf, type CommandOf, type NewCommandOf } from "../envelope.ts";
import {
  AGG,
  CMD,
  type AggregateType,
  type BucketCreateCommandData,
  type BucketDeleteCommandData,
  type BucketFinalizeCommandData,
  type BucketReserveCommandData,
  type BucketUpdateCommandData,
  type FileDeleteCommandData,
  type KeyMintCommandData,
  type KeyRevokeCommandData,
  type SponsorExecuteCommandData,
  type SponsorReserveCommandData,
  type UploadStartCommandData,
} from "./events.ts";

export interface ConsoleCommandData {
  [CMD.keyMint]: KeyMintCommandData;
  [CMD.keyRevoke]: KeyRevokeCommandData;
  [CMD.bucketCreate]: BucketCreateCommandData;
  [CMD.bucketReserve]: BucketReserveCommandData;
  [CMD.bucketFinalize]: BucketFinalizeCommandData;
  [CMD.bucketUpdate]: BucketUpdateCommandData;
  [CMD.bucketDelete]: BucketDeleteCommandData;
  [CMD.uploadStart]: UploadStartCommandData;
  [CMD.fileDelete]: FileDeleteCommandData;
  [CMD.sponsorReserve]: SponsorReserveCommandData;
  [CMD.sponsorExecute]: SponsorExecuteCommandData;
}
export type ConsoleCommandType = keyof ConsoleCommandData;
/** A console command as its actor receives it. */
export type ConsoleCommand = CommandOf<ConsoleCommandData>;
/** A console command about to be published (actors/console/log.ts adds the envelope). */
export type NewConsoleCommand = NewCommandOf<ConsoleCommandData>;

/** The aggregate type each command addresses (its subject `cmd.<aggregate type>.<id>`). */
export const COMMAND_AGGREGATE: Readonly<Record<ConsoleCommandType, AggregateType>> = {
  [CMD.keyMint]: AGG.key,
  [CMD.keyRevoke]: AGG.key,
  [CMD.bucketCreate]: AGG.bucket,
  [CMD.bucketReserve]: AGG.bucket,
  [CMD.bucketFinalize]: AGG.bucket,
  [CMD.bucketUpdate]: AGG.bucket,
  [CMD.bucketDelete]: AGG.bucket,
  [CMD.uploadStart]: AGG.upload,
  [CMD.fileDelete]: AGG.file,
  [CMD.sponsorReserve]: AGG.sponsor,
  [CMD.sponsorExecute]: AGG.sponsor,
};

/** Current version of every console command type (all 1 so far). */
const CONSOLE_COMMAND_VERSIONS = Object.fromEntries(Object.values(CMD).map((type) => [type, 1])) as Record<ConsoleCommandType, number>;

/** A command read back from the work queue is one of the console's when its type is in the catalogue. */
export function isConsoleCommand(c: unknown): c is ConsoleCommand {
  if (typeof c !== "object" || c === null || !("type" in c) || !("data" in c)) return false;
  return typeof c.type === "string" && Object.hasOwn(COMMAND_AGGREGATE, c.type) && typeof c.data === "object" && c.data !== null;
}

/** A console command at its type's current version. */
export const consoleCommand = commandsOf<ConsoleCommandData>(CONSOLE_COMMAND_VERSIONS);
