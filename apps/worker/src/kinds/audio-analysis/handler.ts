import { join } from "node:path";
import type { ObjectStorage } from "@mixdown/storage";
import type { JobHandler } from "../../run-job.ts";
import { fetchCheckedInput, separationInput } from "../../steps/input-length.ts";
import type { WorkerKind } from "../context.ts";
import type { AudioAnalysisPool } from "./protocol.ts";

export interface AudioAnalysisJobDeps {
  storage: ObjectStorage;
  /** MAX_SEPARATION_SECONDS: a longer input fails the job (bad input). */
  maxInputSeconds: number;
  pool: AudioAnalysisPool;
}

/** Analyses one uploaded file: fetch it, run the analysis in a thread, publish the result on the row (no files). */
export function audioAnalysisHandler(deps: AudioAnalysisJobDeps): JobHandler<"audio-analysis"> {
  return {
    async run({ row, workDir, log, reportProgress, signal }) {
      const inputPath = join(workDir, "input");
      const inputProbe = await fetchCheckedInput(
        deps.storage,
        row.inputKey,
        inputPath,
        separationInput(deps.maxInputSeconds),
        signal,
      );
      const { analysis, analyzer } = await deps.pool.run({ inputPath, inputProbe }, reportProgress, signal);
      log.info({ seconds: analysis.durationSeconds, key: analysis.key, bpm: analysis.tempo?.bpm }, "analysed");
      return { analysis: JSON.parse(JSON.stringify(analysis)), analyzer };
    },
  };
}

export const audioAnalysisKind: WorkerKind<"audio-analysis"> = {
  start: ({ config, storage, audioAnalysisPool }) =>
    audioAnalysisHandler({ storage, maxInputSeconds: config.MAX_SEPARATION_SECONDS, pool: audioAnalysisPool() }),
};
