import { uploadKey, type ObjectStorage } from "@mixdown/storage";
import type { FastifyBaseLogger } from "fastify";
import { CONTENT_TYPE, type AudioFormat } from "../uploads/audio-format.ts";
import { reclaimBuffersWhile } from "../uploads/buffer-reclaim.ts";
import type { ReceivedFile } from "../uploads/receive-form.ts";

/** Object keys written during one create, deleted again if the create does not complete. */
export class StoredUploads {
  private readonly keys: string[] = [];

  constructor(
    private readonly storage: ObjectStorage,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Copies a received file to `uploads/<kind>/<uuid>.<format>` and returns the key. */
  async store(kind: string, file: ReceivedFile, format: AudioFormat): Promise<string> {
    const key = uploadKey(kind, format);
    this.keys.push(key);
    await reclaimBuffersWhile(() => this.storage.putFile(key, file.path, { contentType: CONTENT_TYPE[format] }));
    return key;
  }

  /** Deletes everything stored so far (best effort: a failure is logged, not thrown). */
  async discard(): Promise<void> {
    await Promise.all(
      this.keys.map((key) =>
        this.storage
          .delete(key)
          .catch((error: unknown) => this.log.error({ err: error, key }, "could not delete orphaned upload")),
      ),
    );
  }

  /** Runs the part of a create that follows storing: on failure the stored objects are deleted. */
  async commit<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      await this.discard();
      throw error;
    }
  }
}
