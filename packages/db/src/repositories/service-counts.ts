import type { JobTableKind, RecordKind } from "@mixdown/jobs";
import type { JobStatus, PrismaClient } from "../generated/prisma/client.ts";

export type CountedJobKind = RecordKind;

type GroupCount = { status: JobStatus; _count: { _all: number } };
/** One grouped count per job table kind: a kind added to the catalogue does not compile until it is counted here. */
type CountsByTable = { [K in JobTableKind]: (prisma: PrismaClient) => Promise<Array<{ kind: RecordKind } & GroupCount>> };
const COUNTS: CountsByTable = {
  separation: async (prisma) =>
    (await prisma.separationJob.groupBy({ by: ["kind", "status"], _count: { _all: true } })).map((g) => ({ ...g, kind: g.kind })),
  "voice-conversion": async (prisma) =>
    (await prisma.voiceConversionJob.groupBy({ by: ["status"], _count: { _all: true } })).map((g) => ({
      ...g,
      kind: "voice_conversion",
    })),
  "voice-blend": async (prisma) =>
    (await prisma.voiceBlendJob.groupBy({ by: ["status"], _count: { _all: true } })).map((g) => ({ ...g, kind: "voice_blend" })),
  tts: async (prisma) =>
    (await prisma.ttsJob.groupBy({ by: ["status"], _count: { _all: true } })).map((g) => ({ ...g, kind: "tts" })),
};

/** Totals for /metrics: cheap grouped counts over the job tables (their status indexes cover them). */
export class ServiceCountRepository {
  constructor(private readonly prisma: PrismaClient) {}

  async jobsByKindAndStatus(): Promise<Array<{ kind: CountedJobKind; status: JobStatus; count: number }>> {
    const groups = await Promise.all(Object.values(COUNTS).map((count) => count(this.prisma)));
    return groups.flat().map((g) => ({ kind: g.kind, status: g.status, count: g._count._all }));
  }
}
