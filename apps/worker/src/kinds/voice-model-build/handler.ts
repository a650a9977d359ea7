import { open, readFile } from "node:fs/promises";
import { join } from "node:path";
import { JobFailure } from "@mixdown/jobs";
import type { JobQueues } from "@mixdown/queue";
import { voiceModelKeys, type ObjectStorage } from "@mixdown/storage";
import { readTorchFile, TorchFileError } from "@mixdown/python/torch-file";
import { FeatureIndexError, inspectFeatureIndexFile, type FeatureIndexInfo } from "@mixdown/voice/feature-index";
import { inspectVoiceModelFile, rvcVersionOf, VoiceModelFileError } from "@mixdown/voice/model-file";
import { ModelSourceError, unpackVoiceModel } from "@mixdown/voice/model-source";
import { convertRvcCheckpoint, describeRvcCheckpoint } from "@mixdown/voice/rvc-checkpoint";
import { WebhookAddressPolicy } from "@mixdown/webhooks";
import { downloadLink, type LinkDownloads } from "../../steps/download-link.ts";
import type { BuiltVoiceModel, VoiceModel } from "@mixdown/db";
import type { JobHandler } from "../../run-job.ts";
import type { VoiceBuildPool } from "./protocol.ts";
import { ensurePyTorch } from "@mixdown/python";
import type { WorkerKind } from "../context.ts";
import { createVoiceBuildPool } from "./protocol.ts";

export interface VoiceModelBuildJobDeps {
  storage: ObjectStorage;
  pool: VoiceBuildPool;
  /** A python3 with Debian's PyTorch for converting RVC `.pth` files (installed on demand). */
  python: () => Promise<string>;
  /** To queue the new model's demo and cover once it is ready. */
  queues: Pick<JobQueues, "enqueue">;
  /** Imports from a link: the addresses they may reach (WEBHOOK_DENIED_NETWORKS) and an upload's limits. */
  links: LinkDownloads & {
    /** MAX_VOICE_MODEL_UPLOAD_BYTES: the download, and the model unpacked from a zip. */
    maxModelBytes: number;
    /** MAX_VOICE_MODEL_INDEX_BYTES: an `indexUrl`'s download, and the index unpacked from a zip. */
    maxIndexBytes: number;
  };
}

/** Where a built native model is stored: the same key an uploaded model gets, overwritten by a retry. */
/** Where the feature index of a model imported from a link is stored, as an uploaded one. */

type Log = { info: (o: object, m: string) => void };

/**
 * Converts a local RVC `.pth` once with Mixdown's own synthesizer (a Python child process with
 * Debian's PyTorch, installed on demand) and checks the result by its signature. A file the
 * converter refuses is a `bad-input` failure naming `field`.
 */
async function convertPth(
  deps: VoiceModelBuildJobDeps,
  pthPath: string,
  workDir: string,
  field: string,
  log: Log,
  signal: AbortSignal,
): Promise<{ outPath: string; details: Record<string, string | number> }> {
  let python: string;
  try {
    python = await deps.python();
  } catch (err) {
    throw new JobFailure("permanent", `converting an RVC .pth needs PyTorch on the worker: ${(err as Error).message}`);
  }
  const outPath = join(workDir, "model.onnx");
  const started = performance.now();
  let info;
  try {
    info = await convertRvcCheckpoint(pthPath, outPath, { python, signal });
  } catch (err) {
    if (err instanceof VoiceModelFileError) throw new JobFailure("bad-input", `${field}: ${err.message}`);
    throw err;
  }
  const graph = inspectVoiceModelFile(await readFile(outPath));
  if (graph.architecture !== "rvc" || !graph.rvcGraph?.startsWith("mixdown"))
    throw new Error(`the RVC converter wrote an unexpected graph (${graph.architecture}/${graph.rvcGraph})`);
  const seconds = Math.round((performance.now() - started) / 100) / 10;
  log.info({ ...info, seconds }, "RVC .pth converted");
  return { outPath, details: { convertedFrom: "pth", version: info.version, speakers: info.speakers, convertSeconds: seconds } };
}

/** An RVC `.pth` the API stored (`referenceKey`): converted, the result stored as the model file. */
async function convertStoredCheckpoint(
  deps: VoiceModelBuildJobDeps,
  key: string,
  rowId: number,
  workDir: string,
  log: Log,
  signal: AbortSignal,
): Promise<BuiltVoiceModel> {
  const pthPath = join(workDir, "model.pth");
  await deps.storage.downloadToFile(key, pthPath);
  const { outPath, details } = await convertPth(deps, pthPath, workDir, "modelFile", log, signal);
  const fileKey = voiceModelKeys(rowId).model;
  await deps.storage.putFile(fileKey, outPath, { contentType: "application/octet-stream" });
  return { fileKey, details };
}

async function startsWithZip(path: string): Promise<boolean> {
  const handle = await open(path, "r");
  try {
    const head = Buffer.alloc(4);
    await handle.read(head, 0, 4, 0);
    return head.equals(Buffer.from("PK\x03\x04", "latin1"));
  } finally {
    await handle.close();
  }
}

/**
 * A model imported from a link (`sourceUrl`, and `metadata.indexUrl`): downloaded into the job's
 * work folder, a zip unpacked (model-source's rules), then taken as an uploaded file would be:
 * a `.pth` converted, an ONNX checked by its signature, an index checked. The index and the
 * model are stored under the model's own deterministic keys (a retry overwrites them) only once
 * everything has passed, and removed again if storing fails halfway.
 */
async function importFromLink(
  deps: VoiceModelBuildJobDeps,
  model: VoiceModel & { sourceUrl: string },
  workDir: string,
  log: Log,
  signal: AbortSignal,
): Promise<BuiltVoiceModel> {
  const { maxModelBytes, maxIndexBytes } = deps.links;
  const indexUrl = (model.metadata as { indexUrl?: unknown } | null)?.indexUrl;
  const downloaded = await downloadLink(
    deps.links,
    "modelUrl",
    model.sourceUrl,
    join(workDir, "download"),
    maxModelBytes,
    log,
    signal,
  );
  let unpacked;
  try {
    unpacked = await unpackVoiceModel(downloaded, join(workDir, "unpacked"), { maxModelBytes, maxIndexBytes });
  } catch (err) {
    if (err instanceof ModelSourceError) throw new JobFailure("bad-input", `modelUrl: ${err.message}`);
    throw err;
  }
  const fromZip = unpacked.archive;
  if (typeof indexUrl === "string" && unpacked.indexPath)
    throw new JobFailure(
      "bad-input",
      `the zip at modelUrl holds a feature index (${fromZip?.index}) and indexUrl names another (${indexUrl}): send one of them`,
    );
  const modelField = fromZip ? `modelUrl (${fromZip.model} in the zip)` : "modelUrl";
  const indexField = typeof indexUrl === "string" ? "indexUrl" : `modelUrl (${fromZip?.index} in the zip)`;
  const indexPath =
    typeof indexUrl === "string"
      ? await downloadLink(deps.links, "indexUrl", indexUrl, join(workDir, "index"), maxIndexBytes, log, signal)
      : unpacked.indexPath;
  let index: FeatureIndexInfo | undefined;
  if (indexPath) {
    try {
      index = await inspectFeatureIndexFile(indexPath);
    } catch (err) {
      if (err instanceof FeatureIndexError) throw new JobFailure("bad-input", `${indexField}: ${err.message}`);
      throw err;
    }
  }

  let onnxPath = unpacked.modelPath;
  let sampleRate: number;
  let architecture: "native" | "rvc";
  let details: Record<string, unknown> = { format: "onnx" };
  const bad = (err: Error) =>
    new JobFailure("bad-input", `${modelField}: ${err.message.replaceAll(`${unpacked.modelPath}: `, "")}`);
  if (await startsWithZip(unpacked.modelPath)) {
    // torch.save writes a zip: an RVC .pth.
    let checkpoint;
    try {
      checkpoint = describeRvcCheckpoint(await readTorchFile(unpacked.modelPath));
    } catch (err) {
      if (err instanceof VoiceModelFileError || err instanceof TorchFileError) throw bad(err);
      throw err;
    }
    const converted = await convertPth(deps, unpacked.modelPath, workDir, modelField, log, signal);
    onnxPath = converted.outPath;
    architecture = "rvc";
    sampleRate = checkpoint.sampleRate;
    details = { ...converted.details, format: "pth", rvc: { ...checkpoint } };
  } else {
    let info;
    try {
      info = inspectVoiceModelFile(await readFile(unpacked.modelPath));
    } catch (err) {
      if (err instanceof VoiceModelFileError) throw bad(err);
      throw err;
    }
    architecture = info.architecture;
    sampleRate = info.architecture === "native" ? (info.sampleRate ?? 44100) : (info.sampleRate ?? model.sampleRate);
    const version = rvcVersionOf(info);
    if (version) details.rvc = { version };
  }
  if (index && architecture !== "rvc")
    throw new JobFailure("bad-input", `${indexField}: only RVC voice models take a feature index`);

  const fileKey = voiceModelKeys(model.id).model;
  const indexKey = voiceModelKeys(model.id).index;
  try {
    if (index && indexPath) {
      await deps.storage.putFile(indexKey, indexPath, { contentType: "application/octet-stream" });
      details = { ...details, indexKey, index: { dim: index.dim, vectors: index.ntotal, lists: index.nlist } };
    }
    await deps.storage.putFile(fileKey, onnxPath, { contentType: "application/octet-stream" });
  } catch (err) {
    await removeImported(deps.storage, model.id);
    throw err;
  }
  if (fromZip) details.unpacked = fromZip;
  return { fileKey, details: details as BuiltVoiceModel["details"], architecture, sampleRate };
}

async function removeImported(storage: ObjectStorage, id: number): Promise<void> {
  for (const key of [voiceModelKeys(id).model, voiceModelKeys(id).index]) await storage.delete(key).catch(() => {});
}

/**
 * Builds a model: from a link (downloaded, unpacked, converted or checked), from a stored RVC
 * `.pth` (converted), or a native voice from the reference recording the API stored (measured in
 * a thread); stores the model file; the table publishes the model `ready` (or `failed` with the
 * reason, e.g. a recording with too little voice), then its media is queued as for any new model.
 */
export function voiceModelBuildHandler(deps: VoiceModelBuildJobDeps): JobHandler<"voice-model-build"> {
  return {
    async run({ row: model, rowId, workDir, log, signal }) {
      if (model.sourceUrl) return importFromLink(deps, { ...model, sourceUrl: model.sourceUrl }, workDir, log, signal);
      if (!model.referenceKey) throw new JobFailure("permanent", "the model has nothing to be built from");
      if (model.architecture === "rvc") return convertStoredCheckpoint(deps, model.referenceKey, rowId, workDir, log, signal);
      const referencePath = join(workDir, "reference");
      await deps.storage.downloadToFile(model.referenceKey, referencePath);
      const outPath = join(workDir, "model.onnx");
      const built = await deps.pool.run({ referencePath, outPath, title: model.title }, () => {}, signal);
      const fileKey = voiceModelKeys(rowId).model;
      await deps.storage.putFile(fileKey, outPath, { contentType: "application/octet-stream" });
      log.info({ activeSeconds: built.activeSeconds }, "native voice built");
      return { fileKey, details: { source: "reference", activeSeconds: Math.round(built.activeSeconds * 10) / 10 } };
    },
    // A link import stopped by a cancel (the row deleted meanwhile) leaves none of its files.
    async discard({ row: model, rowId }) {
      if (model.sourceUrl) await removeImported(deps.storage, rowId);
    },
    // Also after a lost update: the media job does nothing for a model that is not ready.
    async afterComplete({ rowId, log }) {
      await deps.queues
        .enqueue({ queue: "voice-model-media", payload: { voiceModelId: rowId } })
        .catch((err: Error) => log.warn({ err: err.message }, "could not queue the built model's media; the reconciler will"));
    },
  };
}

export const voiceModelBuildKind: WorkerKind<"voice-model-build"> = {
  start: ({ config, storage, queues, logger, pooled, idle }) =>
    voiceModelBuildHandler({
      storage,
      pool: pooled(createVoiceBuildPool(1, idle("voice build"))),
      queues,
      python: () => ensurePyTorch((line) => logger.info(line)),
      links: {
        policy: new WebhookAddressPolicy(config.WEBHOOK_DENIED_NETWORKS),
        maxModelBytes: config.MAX_VOICE_MODEL_UPLOAD_BYTES,
        maxIndexBytes: config.MAX_VOICE_MODEL_INDEX_BYTES,
      },
    }),
};
