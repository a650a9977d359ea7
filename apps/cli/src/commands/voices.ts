import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { loadConfig, loadVoiceModelSettings } from "@mixdown/config";
import { createPrismaClient, VoiceModelImportRepository } from "@mixdown/db";
import { createStorage, voiceModelKeys } from "@mixdown/storage";
import { FeatureIndexError, inspectFeatureIndexFile, type FeatureIndexInfo } from "@mixdown/voice/feature-index";
import { inspectVoiceModelFile, rvcVersionOf, VoiceModelFileError } from "@mixdown/voice/model-file";
import { downloadUrlOf, ModelSourceError, unpackVoiceModel } from "@mixdown/voice/model-source";
import { VoiceAssets } from "@mixdown/voice/assets";
import { downloadFile, DownloadError } from "@mixdown/downloads";
import { UsageError, withDatabase } from "../database.ts";
import { persistentSecret, stateDir } from "../local-state.ts";
import { ensurePyTorch } from "@mixdown/python";
import { importRmvpe, PitchImportError } from "@mixdown/voice/import-pitch";
import { importContentVec } from "@mixdown/voice/import-features";
import { convertRvcCheckpoint, describeRvcCheckpoint, type RvcCheckpointInfo } from "@mixdown/voice/rvc-checkpoint";
import { readTorchFile, TorchFileError } from "@mixdown/python/torch-file";
import { voicesUsage } from "../usage.ts";

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
  if (action === "list") return listCommand(rest, env);
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
      instrument: { type: "boolean", default: false },
    },
  });
  if (positionals.length !== 1)
    throw new UsageError(`voices import takes one model file (.onnx or RVC .pth) or its URL\n${voicesUsage}`);
  if (!values.title) throw new UsageError("voices import needs --title TITLE");
  if (values.public === (values.owner !== undefined))
    throw new UsageError("say who owns the model: --public or --owner CALLER_ID");
  if (values.owner !== undefined && !/^\d+$/.test(values.owner)) throw new UsageError("--owner takes a numeric caller id");
  const rate = values["sample-rate"] === undefined ? undefined : Number(values["sample-rate"]);
  if (rate !== undefined && ![32000, 40000, 48000].includes(rate))
    throw new UsageError("--sample-rate is 32000, 40000 or 48000 (RVC output rate)");

  // A download, a zip's contents and a .pth's conversion go to a scratch folder, removed however the import ends.
  const scratch = await mkdtemp(path.join(tmpdir(), "mixdown-rvc-"));
  try {
    const source = positionals[0]!;
    if (!isLink(source) && (values.index === undefined || !isLink(values.index)))
      return await importModelFile(source, values, rate, scratch, env);
    const fetched = await fetchLinks(source, values.index, scratch, env);
    if (typeof fetched === "number") return fetched;
    const options = { ...values, ...(fetched.indexPath !== undefined ? { index: fetched.indexPath } : {}) };
    return await importModelFile(fetched.modelPath, options, rate, scratch, env, fetched.origin);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

const isLink = (value: string) => /^https?:\/\//i.test(value);

/**
 * `voices import URL` (and `--index URL`): each link downloaded into the scratch folder (progress
 * on stderr; @mixdown/downloads retries and resumes), a zip unpacked with the API's rules (one
 * .pth or .onnx, at most one .index, nothing outside its folder, the upload limits), then
 * imported as a local file. A problem is printed and is exit status 1.
 */
async function fetchLinks(
  source: string,
  index: string | undefined,
  scratch: string,
  env: Record<string, string | undefined>,
): Promise<{ modelPath: string; indexPath?: string; origin?: { url: string; fileName: string } } | number> {
  const limits = loadVoiceModelSettings(env);
  const fetchOne = async (link: string, name: string, maxBytes: number) => {
    const url = downloadUrlOf(link);
    console.error(`downloading ${url}`);
    let last = 0;
    const file = await downloadFile({
      url,
      target: path.join(scratch, "download", name),
      maxBytes,
      log: (line) => console.error(line),
      onProgress: ({ received, total }) => {
        const now = Date.now();
        if (now - last < 2000) return;
        last = now;
        const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
        console.error(`  ${mb(received)} MB${total ? ` of ${mb(total)} MB (${Math.round((100 * received) / total)} %)` : ""}`);
      },
    });
    console.error(`  ${file.sizeBytes} bytes, sha256 ${file.sha256}`);
    return { url, path: file.path };
  };
  try {
    let modelPath = source;
    let indexPath: string | undefined = index;
    let origin: { url: string; fileName: string } | undefined;
    if (isLink(source)) {
      const model = await fetchOne(source, "model", limits.MAX_VOICE_MODEL_UPLOAD_BYTES);
      origin = { url: model.url, fileName: decodeURIComponent(path.posix.basename(new URL(model.url).pathname)) || "model" };
      const unpacked = await unpackVoiceModel(model.path, path.join(scratch, "unpacked"), {
        maxModelBytes: limits.MAX_VOICE_MODEL_UPLOAD_BYTES,
        maxIndexBytes: limits.MAX_VOICE_MODEL_INDEX_BYTES,
      });
      if (unpacked.archive) {
        console.error(`unpacked ${unpacked.archive.model}${unpacked.archive.index ? ` and ${unpacked.archive.index}` : ""}`);
        origin = { ...origin, fileName: path.posix.basename(unpacked.archive.model) };
      }
      if (unpacked.indexPath && index !== undefined) {
        console.error(
          `${source}: the zip holds a feature index (${unpacked.archive?.index}) and --index names another (${index}): give one of them`,
        );
        return 1;
      }
      modelPath = unpacked.modelPath;
      indexPath = unpacked.indexPath ?? index;
    }
    if (indexPath !== undefined && isLink(indexPath))
      indexPath = (await fetchOne(indexPath, "model.index", limits.MAX_VOICE_MODEL_INDEX_BYTES)).path;
    return { modelPath, ...(indexPath !== undefined ? { indexPath } : {}), ...(origin ? { origin } : {}) };
  } catch (err) {
    if (err instanceof DownloadError || err instanceof ModelSourceError) {
      console.error(`${source}: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

/** `voices list`: every voice model, and what each still needs installed on this machine. */
async function listCommand(argv: string[], env: Record<string, string | undefined>): Promise<number> {
  if (argv.length > 0) throw new UsageError(`voices list takes no arguments\n${voicesUsage}`);
  const settings = loadVoiceModelSettings(env);
  const assets = new VoiceAssets({
    modelsDir: path.resolve(env.MODELS_DIR ?? REPO_MODELS),
    contentVec: settings.VOICE_CONTENTVEC_MODEL,
    contentVecV1: settings.VOICE_CONTENTVEC_V1_MODEL,
    rmvpe: settings.VOICE_RMVPE_MODEL,
    pitchMethod: settings.VOICE_PITCH_METHOD,
  });
  const rows = await withDatabase(env, async (databaseUrl) => {
    const prisma = createPrismaClient(databaseUrl);
    try {
      return await prisma.voiceModel.findMany({ orderBy: { id: "asc" } });
    } finally {
      await prisma.$disconnect();
    }
  });
  if (rows.length === 0) {
    console.log("No voice models yet: ./mixdown.sh voices import FILE|URL --title T --public");
    return 0;
  }
  const messages = new Set<string>();
  const table = [["ID", "STATE", "ARCH", "RATE", "OWNER", "TITLE", "NEEDS"]];
  for (const row of rows) {
    const missing = await assets.missingFor(row);
    for (const m of missing) messages.add(m.message);
    const needs = missing.map((m) => `${m.required ? "" : "recommended: "}${m.asset} (${m.install})`).join("; ");
    table.push([
      String(row.id),
      row.state,
      row.architecture,
      String(row.sampleRate),
      row.ownerId === null ? "public" : String(row.ownerId),
      row.title,
      row.state === "failed" ? `failed: ${row.buildError ?? "see the record"}` : needs || "-",
    ]);
  }
  const widths = table[0]!.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
  for (const r of table) console.log(r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  "));
  if (messages.size > 0) {
    console.log("");
    for (const m of messages) console.log(m);
  }
  return 0;
}

/** `voices import`'s options, checked. */
interface ImportOptions {
  title?: string;
  public?: boolean;
  owner?: string;
  tags?: string;
  index?: string;
  /** An instrument model rather than a voice (`GET /voice-models?instruments=true`). */
  instrument?: boolean;
}

async function importModelFile(
  source: string,
  values: ImportOptions,
  rate: number | undefined,
  scratch: string,
  env: Record<string, string | undefined>,
  /** Where a downloaded file came from (recorded in the row's metadata). */
  origin?: { url: string; fileName: string },
): Promise<number> {
  let file = source;
  const sourceName = origin?.fileName ?? path.basename(file);
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

  const version = rvcVersionOf(info);
  const described = {
    source: "cli",
    fileName: sourceName,
    ...(origin ? { url: origin.url } : {}),
    ...(converted ? { format: "pth", rvc: rvcFacts(converted) } : version ? { rvc: { version } } : {}),
  };
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
        instrument: values.instrument === true,
        metadata: described,
      });
      const key = voiceModelKeys(created.id).model;
      const indexKey = voiceModelKeys(created.id).index;
      try {
        await storage.putFile(key, file);
        if (!index) return await imports.publish(created.id, key);
        await storage.putFile(indexKey, values.index!);
        return await imports.publish(created.id, key, undefined, {
          ...described,
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
