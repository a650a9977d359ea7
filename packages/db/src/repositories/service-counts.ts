import type { JobStatus, PrismaClient } from "../generated/prisma/client.ts";

export type CountedJobKind = "vocal_separation" | "stem_split" | "voice_conversion" | "voice_blend" | "tts";

/** Totals for /metrics: cheap grouped counts over the job tables (their status indexes cover them). */
export class ServiceCountRepository {
  constructor(private readonly prisma: PrismaClient) {}

  async jobsByKindAndStatus(): Promise<Array<{ kind: CountedJobKind; status: JobStatus; count: number }>> {
    const [separations, conversions, blends, tts] = await Promise.all([
      this.prisma.separationJob.groupBy({ by: ["kind", "status"], _count: { _all: true } }),
      this.prisma.voiceConversionJob.groupBy({ by: ["status"], _count: { _all: true } }),
      this.prisma.voiceBlendJob.groupBy({ by: ["status"], _count: { _all: true } }),
      this.prisma.ttsJob.groupBy({ by: ["status"], _count: { _all: true } }),
    ]);
    return [
      ...separations.map((g) => ({ kind: g.kind as CountedJobKind, status: g.status, count: g._count._all })),
      ...conversions.map((g) => ({ kind: "voice_conversion" as const, status: g.status, count: g._count._all })),
      ...blends.map((g) => ({ kind: "voice_blend" as const, status: g.status, count: g._count._all })),
      ...tts.map((g) => ({ kind: "tts" as const, status: g.status, count: g._count._all })),
    ];
  }
}
