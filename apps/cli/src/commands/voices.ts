import { readFile } from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { loadConfig } from "@mixdown/config";
import { createPrismaClient, VoiceModelImportRepository } from "@mixdown/db";
import { createStorage } from "@mixdown/storage";
import { inspectVoiceModelFile, VoiceModelFileError } from "@mixdown/voice/model-file";
import { UsageError, withDatabase } from "../database.ts";
import { persistentSecret, stateDir } from "../local-state.ts";

export const voicesUsage = `./mixdown.sh voices import <file.onnx> --title TITLE [--public | --owner CALLER_ID]
                         [--tags a,b] [--sample-rate 40000]   import an RVC v2 or native ONNX voice model`;

/**
 * `voices import`: checks the file's signature, stores it at voice-models/<id>/model.onnx in the
 * configured storage (or the local stack's), and publishes the row. Public models (ownerId null)
 * appear in every caller's catalogue.
 */
export async function voicesCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const [action, ...rest] = argv;
  if (action !== "import") throw new UsageError(`Usage:\n${voicesUsage}`);
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      title: { type: "string" },
      public: { type: "boolean", default: false },
      owner: { type: "string" },
      tags: { type: "string" },
      "sample-rate": { type: "string" },
    },
  });
  if (positionals.length !== 1) throw new UsageError(`voices import takes one ONNX file\n${voicesUsage}`);
  if (!values.title) throw new UsageError("voices import needs --title TITLE");
  if (values.public === (values.owner !== undefined))
    throw new UsageError("say who owns the model: --public or --owner CALLER_ID");
  if (values.owner !== undefined && !/^\d+$/.test(values.owner)) throw new UsageError("--owner takes a numeric caller id");
  const rate = values["sample-rate"] === undefined ? undefined : Number(values["sample-rate"]);
  if (rate !== undefined && ![32000, 40000, 48000].includes(rate))
    throw new UsageError("--sample-rate is 32000, 40000 or 48000 (RVC output rate)");

  const file = positionals[0]!;
  let info;
  try {
    info = inspectVoiceModelFile(await readFile(file));
  } catch (err) {
    if (err instanceof VoiceModelFileError) {
      console.error(`${file}: ${err.message}`);
      return 1;
    }
    throw err;
  }
  const sampleRate = info.architecture === "native" ? (info.sampleRate ?? 44100) : (rate ?? 40000);

  const row = await withDatabase(env, async (databaseUrl) => {
    const dir = stateDir(env);
    const config = loadConfig({
      STORAGE_LOCAL_DIR: path.join(dir, "storage"),
      SIGNED_URL_SECRET: env.SIGNED_URL_SECRET ?? persistentSecret(dir),
      ...env,
      DATABASE_URL: databaseUrl,
    });
    const prisma = createPrismaClient(databaseUrl);
    const storage = createStorage(config);
    const imports = new VoiceModelImportRepository(prisma);
    try {
      const created = await imports.createPending({
        ownerId: values.public ? null : Number(values.owner),
        title: values.title!,
        tags: values.tags
          ? values.tags
              .split(",")
              .map((t) => t.trim())
              .filter(Boolean)
          : [],
        architecture: info.architecture,
        sampleRate,
        metadata: { source: "cli", fileName: path.basename(file) },
      });
      const key = `voice-models/${created.id}/model.onnx`;
      try {
        await storage.putFile(key, file);
        return await imports.publish(created.id, key);
      } catch (err) {
        await imports.delete(created.id);
        throw err;
      }
    } finally {
      await storage.close();
      await prisma.$disconnect();
    }
  });
  console.log(
    `Imported voice model ${row.id} "${row.title}" (${row.architecture}, ${row.sampleRate} Hz, ${row.ownerId === null ? "public" : `owner ${row.ownerId}`}).`,
  );
  return 0;
}
