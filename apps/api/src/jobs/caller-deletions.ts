import { ResourceDeletions, VoiceModelInUseError, type PrismaClient } from "@mixdown/db";
import type { JobQueues } from "@mixdown/queue";
import { StorageUnavailableError, type ObjectStorage } from "@mixdown/storage";
import { ApiError, conflict, notFound, OUTAGE_RETRY_AFTER_SECONDS } from "../http/errors.ts";
import type { CancellableKind, JobCancels } from "./job-cancels.ts";

/**
 * A caller's `DELETE` of one of their jobs or voice models (`ResourceDeletions` does the work:
 * cancel, files, rows). 404 when it is not the caller's, which a second delete also gets; 409 while
 * a running job uses a voice model; 503 with `Retry-After` while object storage cannot be reached
 * (the rows stay, and the deletion is finished by a retry or by the API's sweep of pending ones).
 */
export class CallerDeletions {
  readonly resources: ResourceDeletions;

  constructor(prisma: PrismaClient, storage: ObjectStorage, cancels: JobCancels, queues: Pick<JobQueues, "removeEntry">) {
    this.resources = new ResourceDeletions(prisma, {
      storage,
      cancelJob: (kind, rowId) => cancels.cancelRunning(kind, rowId),
      removeQueueEntry: (kind, rowId) => queues.removeEntry(kind, rowId),
    });
  }

  /** `find` reads the caller's row (null: not theirs, or gone: 404). */
  async deleteJob(kind: CancellableKind, rowId: number, noun: string, find: () => Promise<unknown>): Promise<void> {
    if (!(await find())) throw notFound(`${noun} ${rowId} not found`);
    await answered(() => this.resources.deleteJob(kind, rowId));
  }

  /** The caller's own voice model only: public catalogue models and other callers' are 404. */
  async deleteVoiceModel(
    callerId: number,
    id: number,
    ownerOf: (id: number) => Promise<number | null | undefined>,
  ): Promise<void> {
    if ((await ownerOf(id)) !== callerId) throw notFound(`voice model ${id} not found`);
    await answered(() => this.resources.deleteVoiceModel(id));
  }
}

async function answered(deletion: () => Promise<unknown>): Promise<void> {
  try {
    await deletion();
  } catch (error) {
    if (error instanceof VoiceModelInUseError) throw conflict(error.message);
    if (error instanceof StorageUnavailableError) {
      throw new ApiError(
        503,
        `object storage is unavailable (it could not be reached); the deletion has begun and nothing is lost: retry in ${OUTAGE_RETRY_AFTER_SECONDS} seconds, or leave it: the service finishes it once storage is back`,
        { "retry-after": String(OUTAGE_RETRY_AFTER_SECONDS) },
      );
    }
    throw error;
  }
}
