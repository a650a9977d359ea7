import type { RecordKind } from "@mixdown/jobs";
import { Prisma, type IdempotencyKey, type PrismaClient } from "../generated/prisma/client.ts";

/** What a create made, so that a replay can read its current state: a job of a job table kind, an imported voice model, or a batch. */
export interface IdempotentResource {
  kind: RecordKind | "voice_model" | "batch";
  id: number;
}

export type IdempotencyClaim =
  | { outcome: "claimed"; claimId: number }
  /** The key exists (within the window): the caller compares fingerprints and reads the resource. */
  | { outcome: "exists"; existing: IdempotencyKey };

/**
 * Idempotency keys of creates. A request claims its key by inserting the row; the unique index on
 * (callerId, key) lets exactly one of two concurrent requests win, whatever the timing.
 */
export class IdempotencyKeyRepository {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * Claims `key` for the caller, unless a live row holds it: created after `since`, and either
   * bound to its record or claimed after `abandonedBefore`. Other rows are replaced.
   */
  async claim(
    input: { callerId: number; key: string; fingerprint: string; route: string },
    window: { since: Date; abandonedBefore: Date },
  ): Promise<IdempotencyClaim> {
    const expired: Prisma.IdempotencyKeyWhereInput = {
      OR: [{ createdAt: { lt: window.since } }, { resourceId: null, createdAt: { lt: window.abandonedBefore } }],
    };
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const row = await this.prisma.idempotencyKey.create({ data: input, select: { id: true } });
        return { outcome: "claimed", claimId: row.id };
      } catch (error) {
        if (!(error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2002")) throw error;
      }
      const existing = await this.prisma.idempotencyKey.findUnique({
        where: { callerId_key: { callerId: input.callerId, key: input.key } },
      });
      // Gone in between (released by a failed first request, or pruned): try the insert again.
      if (!existing) continue;
      const dead =
        existing.createdAt < window.since || (existing.resourceId === null && existing.createdAt < window.abandonedBefore);
      if (!dead) return { outcome: "exists", existing };
      // Delete exactly that row, and only if still dead (a concurrent request may have replaced it), then retry.
      await this.prisma.idempotencyKey.deleteMany({ where: { id: existing.id, ...expired } });
    }
    throw new Error(`could not claim idempotency key ${JSON.stringify(input.key)}: it changed hands three times`);
  }

  /** Points a claim at the record its request created. */
  async complete(claimId: number, resource: IdempotentResource): Promise<void> {
    await this.prisma.idempotencyKey.update({
      where: { id: claimId },
      data: { resourceKind: resource.kind, resourceId: resource.id },
    });
  }

  /** Gives a claim up (its create failed), so the key can be used again. */
  async release(claimId: number): Promise<void> {
    await this.prisma.idempotencyKey.deleteMany({ where: { id: claimId, resourceId: null } });
  }

  /** Deletes keys created before `before`; returns how many. */
  async pruneOlderThan(before: Date): Promise<number> {
    const { count } = await this.prisma.idempotencyKey.deleteMany({ where: { createdAt: { lt: before } } });
    return count;
  }
}
