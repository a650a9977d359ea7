import type { PrismaClient } from "../generated/prisma/client.ts";

export interface VoiceCatalogueEntry {
  slug: string;
  title: string;
  tags: string[];
  architecture: string;
  sampleRate: number;
  fileKey: string;
  /** An instrument model rather than a voice. */
  instrument?: boolean;
  metadata: Record<string, string | number | boolean>;
}

/**
 * Registers the built-in public voices (ownerId null), matched by slug: missing ones are created,
 * existing ones get the current file and rate; titles and tags an operator edited are kept.
 * Safe when the API and a worker run it at the same time.
 */
export async function registerVoiceCatalogue(prisma: PrismaClient, entries: VoiceCatalogueEntry[]): Promise<number> {
  let created = 0;
  for (const entry of entries) {
    const { slug, title, tags, ...technical } = entry;
    for (let attempt = 0; ; attempt++) {
      try {
        const existing = await prisma.voiceModel.findUnique({ where: { slug } });
        if (existing) {
          await prisma.voiceModel.update({ where: { slug }, data: technical });
        } else {
          await prisma.voiceModel.create({ data: { ...entry, ownerId: null, state: "ready" } });
          created++;
        }
        break;
      } catch (err) {
        // Another process created the same slug between the read and the write.
        if (attempt === 0 && (err as { code?: string }).code === "P2002") continue;
        throw err;
      }
    }
  }
  return created;
}
