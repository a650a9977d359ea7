import { join } from "node:path";
import type { SeparationOutputs, StoredStem } from "@mixdown/db";
import { JobFailure } from "@mixdown/jobs";
import type { OutputSpec } from "@mixdown/separation";
import { modelServes, readSeparationModels, vocalPairOf, type SeparationModelEntry } from "@mixdown/separation/catalog";
import type { ObjectStorage } from "@mixdown/storage";
import type { JobHandler } from "../run-job.ts";
import type { SeparationPool } from "../separation-protocol.ts";

export interface SeparationJobDeps {
  storage: ObjectStorage;
  pool: SeparationPool;
  losslessFormat: "wav" | "flac";
  lossyBitrateKbps: number;
  /** Model names per separation kind (the manifests in MODELS_DIR): for jobs that name none. */
  models: { vocalSeparation: string; stemSplit: string };
  modelsDir: string;
}

/**
 * The model a job runs with: its own (the create's `model` field), else the setting for its kind.
 * The API checked a named model at create; it is checked again here because the models directory
 * may have changed since, and a model that cannot serve the kind will never succeed.
 */
async function jobModel(
  deps: SeparationJobDeps,
  kind: "vocal-separation" | "stem-split",
  named: string | null,
): Promise<SeparationModelEntry> {
  const name = named ?? (kind === "vocal-separation" ? deps.models.vocalSeparation : deps.models.stemSplit);
  const { models } = await readSeparationModels(deps.modelsDir);
  const model = models.find((m) => m.name === name);
  if (!model) throw new JobFailure("permanent", `The separation model "${name}" is not installed`);
  if (!modelServes(model, kind))
    throw new JobFailure("bad-input", `The separation model "${name}" (stems: ${model.stems.join(", ")}) cannot serve a ${kind}`);
  return model;
}

/**
 * Separates one uploaded file: download, separate in a thread, upload every output under the
 * row's own keys (`outputs/<kind>/<id>/<stem>.<format>`, overwritten in place by a retry).
 */
export function separationHandler(deps: SeparationJobDeps): JobHandler<"separation"> {
  return {
    async run({ row, payload, rowId, workDir, log, reportProgress, signal }) {
      const { kind } = payload;
      const inputPath = join(workDir, "input");
      await deps.storage.downloadToFile(row.inputKey, inputPath);
      signal.throwIfAborted();
      const outputs: OutputSpec[] = [
        deps.losslessFormat === "flac" ? { format: "flac", bitDepth: 24 } : { format: "wav", sampleFormat: "f32" },
        { format: "mp3", bitrateKbps: deps.lossyBitrateKbps },
      ];
      const model = await jobModel(deps, kind, row.model);
      const result = await deps.pool.run(
        { inputPath, modelName: model.name, outDir: join(workDir, "out"), outputs },
        reportProgress,
        signal,
      );
      log.info({ timings: result.timings, frames: result.frames, sampleRate: result.sampleRate }, "separated");

      const lossless = deps.losslessFormat;
      const prefix = `outputs/${kind}/${rowId}`;
      const upload = async (stem: string, format: "wav" | "flac" | "mp3"): Promise<string> => {
        const path = result.stems[stem]?.[format];
        if (!path) throw new Error(`the separation produced no ${format} file for stem ${stem}`);
        const key = `${prefix}/${stem}.${format}`;
        await deps.storage.putFile(key, path);
        return key;
      };
      // A vocal separation publishes vocals and backing; a stem split every stem the network
      // outputs (all six of a 6-stem model), not the derived backing, which is no instrument.
      // Vocal and backing URLs come with either kind whenever the model has vocals.
      const pair = vocalPairOf(Object.keys(result.stems));
      if (kind === "vocal-separation" && !pair)
        throw new JobFailure("permanent", `The separation model "${model.name}" produced no vocals and backing`);
      const stemNames = kind === "vocal-separation" ? [pair!.vocals, pair!.backing] : model.stems;
      const keys = new Map<string, { lossless: string; lossy: string }>();
      for (const stem of new Set([...stemNames, ...(pair ? [pair.vocals, pair.backing] : [])])) {
        signal.throwIfAborted();
        const [losslessKey, lossyKey] = await Promise.all([upload(stem, lossless), upload(stem, "mp3")]);
        keys.set(stem, { lossless: losslessKey, lossy: lossyKey });
      }
      // A single-stem model's secondary may have another name; the record's stem entry says backing.
      const instrument = (stem: string) => (pair && stem === pair.backing ? "backing" : stem);
      const stems: StoredStem[] = stemNames.map((s) => ({ instrument: instrument(s), key: keys.get(s)!.lossless }));
      const lossyStems: StoredStem[] = stemNames.map((s) => ({ instrument: instrument(s), key: keys.get(s)!.lossy }));
      return {
        vocalKey: pair ? keys.get(pair.vocals)!.lossless : null,
        lossyVocalKey: pair ? keys.get(pair.vocals)!.lossy : null,
        backingKey: pair ? keys.get(pair.backing)!.lossless : null,
        stems,
        lossyStems,
        model: model.name,
      } satisfies SeparationOutputs;
    },
    async discard({ payload, rowId }) {
      await deps.storage.deletePrefix(`outputs/${payload.kind}/${rowId}/`);
    },
  };
}
