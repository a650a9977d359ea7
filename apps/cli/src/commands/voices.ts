import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { loadConfig } from "@mixdown/config";
import { createPrismaClient, VoiceModelImportRepository } from "@mixdown/db";
import { createStorage } from "@mixdown/storage";
import { FeatureIndexError, inspectFeatureIndexFile, type FeatureIndexInfo } from "@mixdown/voice/feature-index";
import { inspectVoiceModelFile, VoiceModelFileError } from "@mixdown/voice/model-file";
import { UsageError, withDatabase } from "../database.ts";
import { persistentSecret, stateDir } from "../local-state.ts";
import { ensurePyTorch } from "@mixdown/separation/import";
import { importRmvpe, PitchImportError } from "@mixdown/voice/import-pitch";
import { importContentVec } from "@mixdown/voice/import-features";
import { convertRvcCheckpoint, describeRvcCheckpoint, type RvcCheckpointInfo } from "@mixdown/voice/rvc-checkpoint";
import { readTorchFile, TorchFileError } from "@mixdown/separation/torch-file";

export const voicesUsage = `./mixdown.sh voices import <file.onnx|file.pth> --title TITLE [--public | --owner CALLER_ID]
                         [--tags a,b] [--sample-rate 40000] [--index file.index]
                                 import an RVC v2 or native ONNX voice model (an RVC model with
                                 its feature index: the faiss .index its training wrote)
./mixdown.sh voices import-features <hubert_base.pt|vec-*.onnx> [--models-dir DIR]
                                 installs the ContentVec features RVC models take (MODELS_DIR/
                                 VOICE_CONTENTVEC_MODEL, 768-d for v2, and VOICE_CONTENTVEC_V1_MODEL,
                                 256-d for v1); a checkpoint is converted once to both
./mixdown.sh voices import-pitch <rmvpe.pt|rmvpe.onnx> [--models-dir DIR]
                                 installs the RMVPE pitch model RVC conversions use (at
                                 MODELS_DIR/VOICE_RMVPE_MODEL); a rmvpe.pt is converted to ONNX once
                                 (Debian's PyTorch is installed for that on first use)
./mixdown.sh voices pull hubert|rmvpe [--force] [--models-dir DIR]
                                 downloads RVC's hubert_base.pt / rmvpe.pt (checked against the
                                 SHA-256 RVC pins) and installs them as the two commands above do;
                                 the same as ./mixdown.sh models pull hubert rmvpe`;

const rvcFacts = (c: RvcCheckpointInfo) => ({ version: c.version, f0: c.f0, sampleRate: c.sampleRate, speakers: c.speakers });

const REPO_MODELS = fileURLToPath(new URL("../../../../models", import.meta.url));

/**
 * The shape both single-file imports share: one positional file and `--models-dir`; `install`
 * gets the file, the models directory and the PyTorch/log hooks, and prints what it installed.
 * A converter's refusal (a PitchImportError or an ImportProblem) is printed and exits 1.
 */
async function importOneFile(
  argv: string[],
  env: Record<string, string | undefined>,
  usage: string,
  install: (
    file: string,
    modelsDir: string,
    hooks: { python: () => Promise<string>; log: (line: string) => void; env: Record<string, string | undefined> },
  ) => Promise<void>,
): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { "models-dir": { type: "string" } },
  });
  if (positionals.length !== 1) throw new UsageError(`${usage}\n${voicesUsage}`);
  const modelsDir = path.resolve(values["models-dir"] ?? env.MODELS_DIR ?? REPO_MODELS);
  const log = (line: string) => console.error(line);
  try {
    await install(positionals[0]!, modelsDir, { python: () => ensurePyTorch(log, env), log, env });
    return 0;
  } catch (err) {
    if (err instanceof PitchImportError || (err as Error).name === "ImportProblem") {
      console.error((err as Error).message);
      return 1;
    }
    throw err;
  }
}

/** `voices import-features FILE`: converts or checks the content-feature models RVC models take. */
function importFeaturesCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const usage = "voices import-features takes one file (hubert_base.pt, a ContentVec checkpoint, or an ONNX)";
  return importOneFile(argv, env, usage, async (file, modelsDir, hooks) => {
    const targets = {
      v2: path.resolve(modelsDir, env.VOICE_CONTENTVEC_MODEL ?? "voices/vec-768-layer-12.onnx"),
      v1: path.resolve(modelsDir, env.VOICE_CONTENTVEC_V1_MODEL ?? "voices/vec-256-layer-9.onnx"),
    };
    const { installed, converted } = await importContentVec(file, targets, hooks);
    for (const f of installed) console.log(`Installed ${f}${converted ? " (converted from the checkpoint)" : ""}.`);
  });
}

/** `voices import-pitch FILE`: converts or checks an RMVPE model and installs it where the worker looks. */
function importPitchCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const usage = "voices import-pitch takes one file (rmvpe.pt or rmvpe.onnx)";
  return importOneFile(argv, env, usage, async (file, modelsDir, hooks) => {
    const target = path.resolve(modelsDir, env.VOICE_RMVPE_MODEL ?? "voices/rmvpe.onnx");
    const { converted } = await importRmvpe(file, target, hooks);
    console.log(`Installed the RMVPE pitch model at ${target}${converted ? " (converted from the PyTorch checkpoint)" : ""}.`);
    console.log("RVC conversions use it for f0 (VOICE_PITCH_METHOD=auto); restart the worker if it is running.");
  });
}

/**
 * `voices import`: checks the file's signature (and the index's structure), stores it at
 * voice-models/<id>/model.onnx (the index at model.index, its key in the row's metadata) in the
 * configured storage (or the local stack's), and publishes the row. Public models (ownerId null)
 * appear in every caller's catalogue.
 */
export async function voicesCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  const [action, ...rest] = argv;
  if (action === "import-pitch") return importPitchCommand(rest, env);
  if (action === "import-features") return importFeaturesCommand(rest, env);
  if (action === "pull") {
    const { positionals: names } = parseArgs({
      args: rest,
      allowPositionals: true,
      options: { force: { type: "boolean" }, "models-dir": { type: "string" } },
    });
    if (names.length === 0 || names.some((n) => n !== "hubert" && n !== "rmvpe"))
      throw new UsageError(`voices pull takes hubert and/or rmvpe\n${voicesUsage}`);
    const { modelsCommand } = await import("./models.ts");
    return modelsCommand(["pull", ...rest], env);
  }
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
      index: { type: "string" },
    },
  });
  if (positionals.length !== 1) throw new UsageError(`voices import takes one model file (.onnx or RVC .pth)\n${voicesUsage}`);
  if (!values.title) throw new UsageError("voices import needs --title TITLE");
  if (values.public === (values.owner !== undefined))
    throw new UsageError("say who owns the model: --public or --owner CALLER_ID");
  if (values.owner !== undefined && !/^\d+$/.test(values.owner)) throw new UsageError("--owner takes a numeric caller id");
  const rate = values["sample-rate"] === undefined ? undefined : Number(values["sample-rate"]);
  if (rate !== undefined && ![32000, 40000, 48000].includes(rate))
    throw new UsageError("--sample-rate is 32000, 40000 or 48000 (RVC output rate)");

  // A .pth is converted into a scratch folder, removed however the import ends.
  const scratch = await mkdtemp(path.join(tmpdir(), "mixdown-rvc-"));
  try {
    return await importModelFile(positionals[0]!, values, rate, scratch, env);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** `voices import`'s options, checked. */
interface ImportOptions {
  title?: string;
  public?: boolean;
  owner?: string;
  tags?: string;
  index?: string;
}

async function importModelFile(
  source: string,
  values: ImportOptions,
  rate: number | undefined,
  scratch: string,
  env: Record<string, string | undefined>,
): Promise<number> {
  let file = source;
  const sourceName = path.basename(file);
  let converted: RvcCheckpointInfo | undefined;
  let info;
  try {
    const bytes = await readFile(file);
    // torch.save writes a zip: an RVC .pth, converted here once (Debian's PyTorch on demand).
    if (bytes.subarray(0, 4).equals(Buffer.from("PK\x03\x04", "latin1"))) {
      const checkpoint = describeRvcCheckpoint(await readTorchFile(file));
      const out = path.join(scratch, "model.onnx");
      console.error(
        `converting ${file} (RVC ${checkpoint.version}, ${checkpoint.sampleRate / 1000} kHz) with Mixdown's synthesizer`,
      );
      converted = await convertRvcCheckpoint(file, out, { python: await ensurePyTorch((line) => console.error(line), env) });
      file = out;
    }
    info = inspectVoiceModelFile(converted ? await readFile(file) : bytes);
  } catch (err) {
    if (err instanceof VoiceModelFileError || err instanceof TorchFileError) {
      console.error(`${source}: ${err.message}`);
      return 1;
    }
    throw err;
  }
  const sampleRate = converted
    ? converted.sampleRate
    : info.architecture === "native"
      ? (info.sampleRate ?? 44100)
      : (info.sampleRate ?? rate ?? 40000);
  let index: FeatureIndexInfo | undefined;
  if (values.index !== undefined) {
    if (info.architecture !== "rvc") throw new UsageError("--index goes with an RVC model (it is that model's feature index)");
    try {
      index = await inspectFeatureIndexFile(values.index);
    } catch (err) {
      if (err instanceof FeatureIndexError || (err as NodeJS.ErrnoException).code === "ENOENT") {
        console.error(`${values.index}: ${(err as Error).message}`);
        return 1;
      }
      throw err;
    }
  }

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
        metadata: { source: "cli", fileName: sourceName, ...(converted ? { format: "pth", rvc: rvcFacts(converted) } : {}) },
      });
      const key = `voice-models/${created.id}/model.onnx`;
      const indexKey = `voice-models/${created.id}/model.index`;
      try {
        await storage.putFile(key, file);
        if (!index) return await imports.publish(created.id, key);
        await storage.putFile(indexKey, values.index!);
        return await imports.publish(created.id, key, undefined, {
          source: "cli",
          fileName: sourceName,
          ...(converted ? { format: "pth", rvc: rvcFacts(converted) } : {}),
          indexKey,
          index: { dim: index.dim, vectors: index.ntotal, lists: index.nlist },
        });
      } catch (err) {
        for (const k of [key, indexKey]) await storage.delete(k).catch(() => {});
        await imports.delete(created.id);
        throw err;
      }
    } finally {
      await storage.close();
      await prisma.$disconnect();
    }
  });
  console.log(
    `Imported voice model ${row.id} "${row.title}" (${row.architecture}, ${row.sampleRate} Hz, ${row.ownerId === null ? "public" : `owner ${row.ownerId}`}${index ? `, index of ${index.ntotal} ${index.dim}-d features` : ""}).`,
  );
  return 0;
}
