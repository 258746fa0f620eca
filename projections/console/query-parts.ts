// The pieces the console's queries (./queries.ts, ./file-search.ts) share: the rows they return, the column lists that
// select them, and small SQL helpers.
import type { SortOrder } from "../../schemas/console/http.ts";
import type { KeyRole, SpaceRole, SpaceType } from "../../schemas/console/events.ts";

export interface KeyRow {
  readonly key_id: string;
  readonly user_id: string;
  readonly role: KeyRole;
  readonly hash: string;
  readonly space_id: string | null;
  readonly service_address: string | null;
}

export interface SpaceRow {
  readonly space_id: string;
  readonly type: SpaceType;
  readonly name: string;
  readonly tier: string;
  readonly storage_used: string;
  readonly storage_cap: string;
  readonly bucket_count: number;
  readonly member_count: number;
  readonly role: SpaceRole;
  readonly created_at: Date;
}

export interface BucketRow {
  readonly bucket_id: string;
  readonly space_id: string;
  readonly name: string;
  readonly storage_bucket_name: string;
  readonly visibility: "public" | "private";
  readonly state: string;
  readonly encryption_policy_id: string | null;
  readonly storage_used: string;
  readonly file_count: number;
  readonly reserve_digest: string | null;
  readonly last_error: { code: string; error: string } | null;
  readonly created_at: Date;
  readonly updated_at: Date;
  readonly name_lower: string;
}

export interface FileRow {
  readonly file_id: string;
  readonly bucket_id: string;
  readonly space_id: string;
  readonly name: string;
  readonly blob_id: string;
  readonly storage_object_id: string | null;
  readonly storage_bucket_name: string;
  readonly storage_key: string;
  readonly size: string;
  readonly mime_type: string;
  readonly status: string;
  readonly is_private: boolean;
  readonly metadata: Record<string, unknown>;
  readonly name_claim: string;
  readonly upload_state: string;
  readonly upload_progress: number | null;
  readonly upload_error: { code: string; message: string } | null;
  readonly upload_finished_at: Date | null;
  readonly created_at: Date;
  readonly updated_at: Date;
  readonly deleted_at: Date | null;
  readonly name_lower: string;
}

export type FileListRow = Pick<
  FileRow,
  "file_id" | "bucket_id" | "name" | "blob_id" | "storage_object_id" | "size" | "mime_type" | "status" | "is_private" | "metadata" | "created_at" | "updated_at" | "deleted_at" | "name_lower"
>;

export const BUCKET_COLS = `bucket_id::text, space_id::text, name, storage_bucket_name, visibility, state, encryption_policy_id, storage_used::text,
  file_count, reserve_digest, last_error, created_at, updated_at, lower(name) AS name_lower`;
/** What a file listing returns (fileJson) plus the cursor's sort key: narrower rows for long pages. */
export const FILE_LIST_COLS = `t.file_id::text, t.bucket_id::text, t.name, t.blob_id, t.storage_object_id, t.size::text, t.mime_type, t.status, t.is_private,
  t.metadata, t.created_at, t.updated_at, t.deleted_at, lower(t.name) AS name_lower`;
export const BUCKET_COLS_B = `b.bucket_id::text, b.space_id::text, b.name, b.storage_bucket_name, b.visibility, b.state, b.encryption_policy_id,
  b.storage_used::text, b.file_count, b.reserve_digest, b.last_error, b.created_at, b.updated_at, lower(b.name) AS name_lower`;
export const FILE_COLS = `file_id::text, bucket_id::text, space_id::text, name, blob_id, storage_object_id, storage_bucket_name, storage_key, size::text,
  mime_type, status, is_private, metadata, name_claim, upload_state, upload_progress, upload_error, upload_finished_at, created_at, updated_at, deleted_at, lower(name) AS name_lower`;

/** `%q%` for LIKE, with the pattern characters of q escaped. */
export const likePattern = (q: string) => `%${q.toLowerCase().replace(/[\\%_]/g, (c) => "\\" + c)}%`;
export const cmp = (o: SortOrder) => (o === "asc" ? ">" : "<");
export const dir = (o: SortOrder) => (o === "asc" ? "ASC" : "DESC");
