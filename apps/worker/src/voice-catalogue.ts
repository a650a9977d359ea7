import { resolve } from "node:path";
import { registerVoiceCatalogue, type PrismaClient } from "@mixdown/db";
import { catalogueRows } from "@mixdown/voice/catalogue";

/** Registers the built-in voices of MODELS_DIR/voices in the public catalogue (idempotent, matched by slug). */
export async function registerDefaultVoices(prisma: PrismaClient, modelsDir: string): Promise<number> {
  return registerVoiceCatalogue(prisma, await catalogueRows(resolve(modelsDir)));
}
