import { join } from "node:path";
import { measureLoudness } from "@mixdown/analysis/loudness";
import { LOUDNESS_TARGET_DEFAULTS } from "@mixdown/mastering/config";
import { jobOutputKeys, type ObjectStorage } from "@mixdown/storage";
import type { JobHandler } from "../../run-job.ts";
import { fetchCheckedInput } from "../../steps/input-length.ts";
import type { WorkerKind } from "../context.ts";
import { createMasteringPool, type MasteringPool } from "./protocol.ts";

export interface MasteringJobDeps {
  storage: ObjectStorage;
  /** MAX_SEPARATION_SECONDS: a longer upload fails the job (bad input). */
  maxInputSeconds: number;
  pool: MasteringPool;
  lossyBitrateKbps: number;
}

/** Share of the progress bar the loudness measures before and after take; the mastering takes the rest. */
const MEASURE_SHARE = 0.05;

/**
 * Masters one upload: fetch the target (and the reference), measure the target's loudness, master
 * it in a thread (Matchering to the reference, or loudnorm to the target loudness) into a 24-bit
 * and a 16-bit WAV and an mp3, measure the master, upload the three.
 */
export function masteringHandler(deps: MasteringJobDeps): JobHandler<"mastering"> {
  return {
    async run({ kind, row, rowId, workDir, log, reportProgress, signal }) {
      const limit = { seconds: deps.maxInputSeconds, setting: "MAX_SEPARATION_SECONDS" };
      const targetPath = join(workDir, "target");
      const named = (field: string) => ({ limit, what: field, named: field });
      const probe = await fetchCheckedInput(deps.storage, row.inputKey, targetPath, named("targetFile"), signal);
      let referencePath: string | undefined;
      if (row.referenceKey) {
        referencePath = join(workDir, "reference");
        await fetchCheckedInput(deps.storage, row.referenceKey, referencePath, named("referenceFile"), signal);
      }
      const loudnessBefore = await measureLoudness(targetPath, signal);
      reportProgress(MEASURE_SHARE);

      const outputs = {
        wav24: join(workDir, "master.wav"),
        wav16: join(workDir, "master-16bit.wav"),
        mp3: join(workDir, "master.mp3"),
      };
      const { processor } = await deps.pool.run(
        {
          targetPath,
          ...(referencePath ? { referencePath } : {}),
          ...(row.targetLufs !== null
            ? { loudness: { integratedLufs: row.targetLufs, truePeakDb: row.truePeakDb ?? LOUDNESS_TARGET_DEFAULTS.truePeakDb } }
            : {}),
          sampleRate: probe.sampleRate,
          outputs,
          mp3BitrateKbps: deps.lossyBitrateKbps,
          scratchDir: workDir,
        },
        (f) => reportProgress(MEASURE_SHARE + f * (1 - 2 * MEASURE_SHARE)),
        signal,
      );
      const loudnessAfter = await measureLoudness(outputs.wav24, signal);
      log.info({ processor, before: loudnessBefore, after: loudnessAfter }, "mastered");

      const stored = jobOutputKeys(kind, rowId);
      const keys = {
        outputKey: stored.file("master.wav"),
        output16BitKey: stored.file("master-16bit.wav"),
        lossyOutputKey: stored.file("master.mp3"),
      };
      await Promise.all([
        deps.storage.putFile(keys.outputKey, outputs.wav24),
        deps.storage.putFile(keys.output16BitKey, outputs.wav16),
        deps.storage.putFile(keys.lossyOutputKey, outputs.mp3),
      ]);
      return { ...keys, loudnessBefore: { ...loudnessBefore }, loudnessAfter: { ...loudnessAfter }, processor };
    },
    async discard({ kind, rowId }) {
      await deps.storage.deletePrefix(jobOutputKeys(kind, rowId).prefix);
    },
  };
}

export const masteringKind: WorkerKind<"mastering"> = {
  start: ({ config, storage, output, pooled, idle }) =>
    masteringHandler({
      storage,
      maxInputSeconds: config.MAX_SEPARATION_SECONDS,
      pool: pooled(createMasteringPool(config.WORKER_CONCURRENCY_MASTERING, idle("mastering"))),
      lossyBitrateKbps: output.lossyBitrateKbps,
    }),
};
