import { JOB_TABLE_KINDS, type JobKind, type JobTableKind } from "@mixdown/jobs";
import type { Prisma, PrismaClient } from "../generated/prisma/client.ts";
import type { OwnedStorage } from "./job-table.ts";
import { JOB_TABLE_ROWS } from "./kinds/index.ts";
import { voiceModelStorage } from "./voice-models.ts";

/** What can be deleted: a job of a job table kind, or a voice model. */
export type DeletableKind = JobTableKind | "voice-model";

/** What a deletion needs besides the database: the storage its files are in, and the queues. */
export interface DeletionEffects {
  /** `@mixdown/storage`'s ObjectStorage, as much of it as a deletion uses (the database package stays below storage). */
  storage: { delete(key: string): Promise<void>; deletePrefix(prefix: string): Promise<number> };
  /**
   * Ends a running job `cancelled` and tells the workers (the one running it stops and discards
   * what it had stored, as for a client's cancel; `JobCancels` in the API, the queues in the CLI).
   */
  cancelJob(kind: JobTableKind, rowId: number): Promise<void>;
  /** Removes a row's BullMQ entry in whatever state it is (a waiting job, a webhook delivery). */
  removeQueueEntry(kind: JobKind, rowId: number): Promise<void>;
}

/** A running job uses the voice model: it cannot be deleted until they have ended. */
export class VoiceModelInUseError extends Error {
  constructor(
    readonly modelId: number,
    readonly jobs: Array<{ kind: JobTableKind; id: number }>,
    reason?: string,
  ) {
    super(
      reason ??
        `voice model ${modelId} is used by running jobs (${jobs.map((j) => `${j.kind} ${j.id}`).join(", ")}); cancel them or wait until they have ended, then delete it`,
    );
    this.name = "VoiceModelInUseError";
  }
}

/** What `purgeCaller` removed, by sort. */
export interface PurgeReport {
  callerId: number;
  callerName: string;
  jobs: Record<JobTableKind, number>;
  voiceModels: number;
  apiKeys: number;
  dashboardSignInCodes: number;
  idempotencyKeys: number;
  webhookDeliveries: number;
  /** Objects deleted under the rows' prefixes, plus the keys they named. */
  storedObjects: number;
}

/**
 * Deletes jobs, voice models and whole callers with every file and row that names them. The
 * order makes a deletion cut short (the process killed, object storage down) finishable, never
 * orphaning a file of a row that is gone:
 *
 * 1. a running job is cancelled (the worker stops and discards its partial outputs);
 * 2. a `PendingDeletion` row records what the resource owns in storage;
 * 3. the files are deleted (a failure stops here: the rows are all still there);
 * 4. one transaction deletes the row, its IdempotencyKey rows, its WebhookDelivery rows and the
 *    `PendingDeletion`; then the queue entries of those deliveries are removed.
 *
 * `finishPending` repeats 3-4 for every `PendingDeletion` left behind. Each step can be repeated,
 * so two deletions of one resource at once, or a sweep beside a request, do no harm.
 */
export class ResourceDeletions {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly effects: DeletionEffects,
  ) {}

  /**
   * Deletes one job (a voice blend: with the voice model it made, see `deleteVoiceModel`). False
   * when there was no such row (a deletion it had begun is finished).
   * @throws StorageUnavailableError from the storage, the rows left for a later try
   */
  async deleteJob(kind: JobTableKind, id: number): Promise<{ deleted: boolean; storedObjects: number }> {
    const rows = JOB_TABLE_ROWS[kind];
    const owned = await rows.owned(this.prisma, id);
    if (!owned) return { deleted: false, storedObjects: await this.#finishGone(kind, id) };
    if (owned.outputModelId !== undefined) {
      const result = await this.deleteVoiceModel(owned.outputModelId);
      // A blend whose model was already gone (the cascade deletes the job with it) cannot stay behind.
      if (!result.deleted) await this.#deleteRows(kind, id, rows.model, owned.recordKind);
      return { deleted: true, storedObjects: result.storedObjects };
    }
    if (owned.status === "running") await this.effects.cancelJob(kind, id);
    await this.#record(kind, id, owned.storage);
    const storedObjects = await this.#deleteFiles(kind, id, owned.storage);
    await this.#deleteRows(kind, id, rows.model, owned.recordKind);
    return { deleted: true, storedObjects };
  }

  /**
   * Deletes a voice model: its files, its row, the blend job that made it (cancelled first when
   * running), and every ended job that used it (conversions and TTS, with their files: what was
   * made in a voice goes with it, and a Kits record's `voiceModelId` must name a model). Refused
   * with `VoiceModelInUseError` while a running job uses it, or while it is being built.
   */
  async deleteVoiceModel(id: number): Promise<{ deleted: boolean; storedObjects: number }> {
    const model = await this.prisma.voiceModel.findUnique({ where: { id }, include: { blendOutput: true } });
    if (!model) return { deleted: false, storedObjects: await this.#finishGone("voice-model", id) };
    const running = await this.runningUsersOf(id);
    if (running.length > 0) throw new VoiceModelInUseError(id, running);
    const blend = model.blendOutput;
    if (model.state === "pending" && !blend && (model.referenceKey || model.sourceUrl)) {
      throw new VoiceModelInUseError(
        id,
        [],
        `voice model ${id} is being built; delete it once it is ready or failed (GET /voice-models/${id} shows its state)`,
      );
    }
    if (blend?.status === "running") await this.effects.cancelJob("voice-blend", blend.id);
    const storage = voiceModelStorage(model);
    await this.#record("voice-model", id, storage);
    let storedObjects = 0;
    for (const kind of ["voice-conversion", "tts"] as const) {
      const users = await this.#jobsNaming(kind, id);
      for (const jobId of users) storedObjects += (await this.deleteJob(kind, jobId)).storedObjects;
    }
    storedObjects += await this.#deleteFiles("voice-model", id, storage);
    const deliveries = await this.prisma.$transaction(async (tx) => {
      const found = blend ? await this.#deleteJobReferences(tx, "voice-blend", blend.id, "voice_blend") : [];
      // The blend job that made the model goes with it (its foreign key cascades).
      await tx.voiceModel.deleteMany({ where: { id } });
      await tx.idempotencyKey.deleteMany({ where: { resourceKind: "voice_model", resourceId: id } });
      await tx.pendingDeletion.deleteMany({ where: { resourceKind: "voice-model", resourceId: id } });
      return found;
    });
    await this.#removeEntries(deliveries, blend ? { kind: "voice-blend", id: blend.id } : undefined);
    for (const kind of ["voice-model-build", "voice-model-media"] as const) {
      await this.effects.removeQueueEntry(kind, id).catch(() => undefined);
    }
    return { deleted: true, storedObjects };
  }

  /** The running jobs that read a voice model: conversions and TTS speaking with it, blends blending it. */
  async runningUsersOf(modelId: number): Promise<Array<{ kind: JobTableKind; id: number }>> {
    const [conversions, tts, blends] = await Promise.all([
      this.prisma.voiceConversionJob.findMany({ where: { voiceModelId: modelId, status: "running" }, select: { id: true } }),
      this.prisma.ttsJob.findMany({ where: { voiceModelId: modelId, status: "running" }, select: { id: true } }),
      this.prisma.voiceBlendJob.findMany({
        where: {
          status: "running",
          OR: [{ model1Id: modelId }, { model2Id: modelId }, { model3Id: modelId }, { model4Id: modelId }],
        },
        select: { id: true },
      }),
    ]);
    return [
      ...conversions.map((r) => ({ kind: "voice-conversion" as const, id: r.id })),
      ...tts.map((r) => ({ kind: "tts" as const, id: r.id })),
      ...blends.map((r) => ({ kind: "voice-blend" as const, id: r.id })),
    ];
  }

  /**
   * Everything of one caller, for a person's request to be forgotten: every job of every kind
   * (running ones cancelled first) with its files, every voice model with its files, then the
   * caller's row, which takes its API keys, dashboard sign-in codes and idempotency keys with it.
   * Null when there is no such caller. A purge cut short is finished by running it again.
   */
  async purgeCaller(callerId: number): Promise<PurgeReport | null> {
    const caller = await this.prisma.caller.findUnique({ where: { id: callerId } });
    if (!caller) return null;
    const report: PurgeReport = {
      callerId,
      callerName: caller.name,
      jobs: Object.fromEntries(JOB_TABLE_KINDS.map((k) => [k, 0])) as Record<JobTableKind, number>,
      voiceModels: 0,
      apiKeys: 0,
      dashboardSignInCodes: 0,
      // Counted first: deleting each job takes the keys that name it.
      idempotencyKeys: await this.prisma.idempotencyKey.count({ where: { callerId } }),
      webhookDeliveries: 0,
      storedObjects: 0,
    };
    // The jobs that use models before the models; a blend deletes the model it made.
    const order: JobTableKind[] = ["separation", "voice-conversion", "tts", "voice-blend"];
    for (const kind of order) {
      for (const id of await this.#callerJobIds(kind, callerId)) {
        report.webhookDeliveries += await this.prisma.webhookDelivery.count({ where: { jobKind: kind, rowId: id } });
        const result = await this.deleteJob(kind, id);
        if (result.deleted) report.jobs[kind] += 1;
        if (kind === "voice-blend" && result.deleted) report.voiceModels += 1;
        report.storedObjects += result.storedObjects;
      }
    }
    const models = await this.prisma.voiceModel.findMany({
      where: { ownerId: callerId },
      select: { id: true },
      orderBy: { id: "asc" },
    });
    for (const { id } of models) {
      const result = await this.deleteVoiceModel(id);
      if (result.deleted) report.voiceModels += 1;
      report.storedObjects += result.storedObjects;
    }
    const keyIds = (await this.prisma.apiKey.findMany({ where: { callerId }, select: { id: true } })).map((k) => k.id);
    report.apiKeys = keyIds.length;
    report.dashboardSignInCodes = await this.prisma.dashboardSignInCode.count({ where: { apiKeyId: { in: keyIds } } });
    // Keys, sign-in codes and the idempotency keys left (those of failed creates) cascade with the caller.
    await this.prisma.caller.deleteMany({ where: { id: callerId } });
    return report;
  }

  /**
   * Finishes every deletion left behind whose last try is older than `before` (a killed process,
   * storage that was down); one that fails again stays, with its attempts and error. Returns how
   * many were finished.
   */
  async finishPending(before: Date): Promise<number> {
    const pending = await this.prisma.pendingDeletion.findMany({ where: { updatedAt: { lt: before } }, orderBy: { id: "asc" } });
    let finished = 0;
    for (const row of pending) {
      try {
        if (row.resourceKind === "voice-model") await this.deleteVoiceModel(row.resourceId);
        else if ((JOB_TABLE_KINDS as readonly string[]).includes(row.resourceKind)) {
          await this.deleteJob(row.resourceKind as JobTableKind, row.resourceId);
        } else continue;
        finished += 1;
      } catch (error) {
        await this.prisma.pendingDeletion.updateMany({
          where: { id: row.id },
          data: { attempts: { increment: 1 }, lastError: (error as Error).message, updatedAt: new Date() },
        });
      }
    }
    return finished;
  }

  async #callerJobIds(kind: JobTableKind, callerId: number): Promise<number[]> {
    const where = { where: { callerId }, select: { id: true }, orderBy: { id: "asc" as const } };
    const rows =
      kind === "separation"
        ? await this.prisma.separationJob.findMany(where)
        : kind === "voice-conversion"
          ? await this.prisma.voiceConversionJob.findMany(where)
          : kind === "tts"
            ? await this.prisma.ttsJob.findMany(where)
            : await this.prisma.voiceBlendJob.findMany(where);
    return rows.map((r) => r.id);
  }

  async #jobsNaming(kind: "voice-conversion" | "tts", modelId: number): Promise<number[]> {
    const where = { where: { voiceModelId: modelId }, select: { id: true } };
    const rows = kind === "tts" ? await this.prisma.ttsJob.findMany(where) : await this.prisma.voiceConversionJob.findMany(where);
    return rows.map((r) => r.id);
  }

  /** Step 2: what the resource owns, recorded before the first file goes. */
  async #record(kind: DeletableKind, id: number, storage: OwnedStorage): Promise<void> {
    await this.prisma.pendingDeletion.upsert({
      where: { resourceKind_resourceId: { resourceKind: kind, resourceId: id } },
      create: { resourceKind: kind, resourceId: id, keys: storage.keys, prefixes: storage.prefixes },
      update: { keys: storage.keys, prefixes: storage.prefixes, updatedAt: new Date() },
    });
  }

  /** Step 3; how many objects went. A storage failure is noted on the pending row and thrown. */
  async #deleteFiles(kind: DeletableKind, id: number, storage: OwnedStorage): Promise<number> {
    try {
      let count = 0;
      for (const prefix of storage.prefixes) count += await this.effects.storage.deletePrefix(prefix);
      for (const key of storage.keys) await this.effects.storage.delete(key);
      return count + storage.keys.length;
    } catch (error) {
      await this.prisma.pendingDeletion
        .updateMany({
          where: { resourceKind: kind, resourceId: id },
          data: { attempts: { increment: 1 }, lastError: (error as Error).message, updatedAt: new Date() },
        })
        .catch(() => undefined);
      throw error;
    }
  }

  /** A resource whose row is gone: a deletion of it that had begun has its files deleted and its record removed. */
  async #finishGone(kind: DeletableKind, id: number): Promise<number> {
    const pending = await this.prisma.pendingDeletion.findUnique({
      where: { resourceKind_resourceId: { resourceKind: kind, resourceId: id } },
    });
    if (!pending) return 0;
    const count = await this.#deleteFiles(kind, id, pending);
    await this.prisma.pendingDeletion.deleteMany({ where: { id: pending.id } });
    return count;
  }

  /** Step 4 for a job. */
  async #deleteRows(kind: JobTableKind, id: number, model: string, recordKind: string): Promise<void> {
    const deliveries = await this.prisma.$transaction(async (tx) => {
      const found = await this.#deleteJobReferences(tx, kind, id, recordKind);
      await (tx[model as "ttsJob"] as unknown as { deleteMany(args: object): Promise<unknown> }).deleteMany({ where: { id } });
      return found;
    });
    await this.#removeEntries(deliveries, { kind, id });
  }

  /**
   * What names a job, deleted within `tx`: its IdempotencyKey rows, its WebhookDelivery rows (a
   * webhook still owed is dropped: the caller asked for the job to be forgotten) and its pending
   * deletion. Returns the deliveries' ids, whose queue entries go once the transaction committed.
   */
  async #deleteJobReferences(
    tx: Prisma.TransactionClient,
    kind: JobTableKind,
    id: number,
    recordKind: string,
  ): Promise<number[]> {
    const deliveries = await tx.webhookDelivery.findMany({ where: { jobKind: kind, rowId: id }, select: { id: true } });
    await tx.webhookDelivery.deleteMany({ where: { jobKind: kind, rowId: id } });
    await tx.idempotencyKey.deleteMany({ where: { resourceKind: recordKind, resourceId: id } });
    await tx.pendingDeletion.deleteMany({ where: { resourceKind: kind, resourceId: id } });
    return deliveries.map((d) => d.id);
  }

  async #removeEntries(deliveryIds: number[], job?: { kind: JobTableKind; id: number }): Promise<void> {
    // The rows are gone: an entry left behind finds nothing to do, so a failure here costs nothing.
    const removals = deliveryIds.map((id) => this.effects.removeQueueEntry("webhook-delivery", id));
    if (job) removals.push(this.effects.removeQueueEntry(job.kind, job.id));
    await Promise.all(removals.map((r) => r.catch(() => undefined)));
  }
}
