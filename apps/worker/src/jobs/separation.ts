import { join } from "node:path";
import type { SeparationOutputs, StoredStem } from "@mixdown/db";
import type { OutputSpec } from "@mixdown/separation";
import type { ObjectStorage } from "@mixdown/storage";
import type { JobHandler } from "../run-job.ts";
import type { SeparationPool } from "../separation-protocol.ts";

export interface SeparationJobDeps {
  storage: ObjectStorage;
  pool: SeparationPool;
  losslessFormat: "wav" | "flac";
  lossyBitrateKbps: number;
  /** Model names per separation kind (the manifests in MODELS_DIR). */
  models: { vocalSeparation: string; stemSplit: string };
}

/** Stems a vocal separation publishes as stem entries; a stem split publishes every model stem but the derived backing. */
const VOCAL_SEPARATION_STEMS = ["vocals", "backing"];

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
      const modelName = kind === "vocal-separation" ? deps.models.vocalSeparation : deps.models.stemSplit;
      const result = await deps.pool.run({ inputPath, modelName, outDir: join(workDir, "out"), outputs }, reportProgress, signal);
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
      const stemNames =
        kind === "vocal-separation" ? VOCAL_SEPARATION_STEMS : Object.keys(result.stems).filter((s) => s !== "backing");
      const stems: StoredStem[] = [];
      const lossyStems: StoredStem[] = [];
      for (const stem of new Set([...stemNames, "vocals", "backing"])) {
        signal.throwIfAborted();
        const [losslessKey, lossyKey] = await Promise.all([upload(stem, lossless), upload(stem, "mp3")]);
        if (stemNames.includes(stem)) {
          stems.push({ instrument: stem, key: losslessKey });
          lossyStems.push({ instrument: stem, key: lossyKey });
        }
      }
      return {
        vocalKey: `${prefix}/vocals.${lossless}`,
        lossyVocalKey: `${prefix}/vocals.mp3`,
        backingKey: `${prefix}/backing.${lossless}`,
        stems,
        lossyStems,
      } satisfies SeparationOutputs;
    },
    async discard({ payload, rowId }) {
      await deps.storage.deletePrefix(`outputs/${payload.kind}/${rowId}/`);
    },
  };
}
