// A storage node's disk: per blob, its metadata (BCS `BlobMetadata`) and the primary and secondary slivers (BCS
// `SliverData`) of the sliver pairs its shards hold, one file each, written to a temporary name and renamed so a
// crash never leaves half a sliver. Directory per blob id (hex), so ids never meet the filesystem's character rules.
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { randomBytes } from "node:crypto";

export type SliverType = "primary" | "secondary";

export class SliverStore {
  constructor(private readonly dir: string) {}

  private blobDir(blobId: Uint8Array): string {
    return join(this.dir, Buffer.from(blobId).toString("hex"));
  }

  private async put(path: string, bytes: Uint8Array): Promise<void> {
    const tmp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
    await writeFile(tmp, bytes, { mode: 0o600 });
    await rename(tmp, path);
  }

  private async get(path: string): Promise<Uint8Array | null> {
    try {
      return new Uint8Array(await readFile(path));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
  }

  async putMetadata(blobId: Uint8Array, metadata: Uint8Array): Promise<void> {
    await mkdir(this.blobDir(blobId), { recursive: true, mode: 0o700 });
    await this.put(join(this.blobDir(blobId), "metadata"), metadata);
  }

  getMetadata(blobId: Uint8Array): Promise<Uint8Array | null> {
    return this.get(join(this.blobDir(blobId), "metadata"));
  }

  async putSliver(blobId: Uint8Array, pairIndex: number, type: SliverType, sliver: Uint8Array): Promise<void> {
    await this.put(join(this.blobDir(blobId), `${type}-${pairIndex}`), sliver);
  }

  getSliver(blobId: Uint8Array, pairIndex: number, type: SliverType): Promise<Uint8Array | null> {
    return this.get(join(this.blobDir(blobId), `${type}-${pairIndex}`));
  }

  /** Removes everything kept for a blob (deleted or expired on chain). */
  async remove(blobId: Uint8Array): Promise<void> {
    await rm(this.blobDir(blobId), { recursive: true, force: true });
  }
}
