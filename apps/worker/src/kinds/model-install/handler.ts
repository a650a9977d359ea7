import { resolve } from "node:path";
import { JobFailure } from "@mixdown/jobs";
import {
  installedEntries,
  readModelCatalogue,
  voiceAssetPaths,
  type ModelCatalogue,
  type VoiceAssetPaths,
} from "@mixdown/model-catalogue";
import type { JobHandler } from "../../run-job.ts";
import type { WorkerKind } from "../context.ts";
import { createModelInstallPool, type ModelInstallPool } from "./protocol.ts";

export interface ModelInstallJobDeps {
  catalogue: ModelCatalogue;
  /** MODELS_DIR, where `models pull` installs too. */
  modelsDir: string;
  assets: VoiceAssetPaths;
  /** MIXDOWN_MODEL_MIRROR */
  mirror: string | undefined;
  pool: ModelInstallPool;
}

/**
 * Installs a model catalogue entry exactly as `./mixdown.sh models pull NAME` does (the same
 * `pullEntry`, in the install thread: each file downloaded, resumed after a cut, checked against
 * the sizes and hashes the catalogue publishes, then installed by the family's importer) into this
 * worker's MODELS_DIR. Progress is the bytes downloaded (the row's 1..90), then the import; an
 * entry installed meanwhile (by a command, or an attempt cut short after its install) succeeds
 * without a download.
 */
export function modelInstallHandler(deps: ModelInstallJobDeps): JobHandler<"model-install"> {
  return {
    async run({ row, signal, log, reportProgress }) {
      const entry = deps.catalogue.models.find((m) => m.name === row.name);
      if (!entry) throw new JobFailure("permanent", `${row.name} is not in this worker's model catalogue`);
      if ((await installedEntries(deps.catalogue, deps.modelsDir, deps.assets)).has(entry.name))
        return { summary: `${entry.name} is installed already` };
      try {
        const installed = await deps.pool.run(
          { entry, modelsDir: deps.modelsDir, assets: deps.assets, mirror: deps.mirror },
          reportProgress,
          signal,
        );
        for (const line of installed.log) log.info({ model: entry.name }, line);
        log.info({ model: entry.name }, installed.summary);
        return { summary: installed.summary };
      } catch (err) {
        if (err instanceof JobFailure && err.kind === "permanent")
          throw new JobFailure("permanent", `cannot install ${entry.name}: ${err.message}`);
        throw err;
      }
    },
  };
}

export const modelInstallKind: WorkerKind<"model-install"> = {
  async start({ config, modelsDir, pooled, idle }) {
    const dir = resolve(modelsDir);
    return modelInstallHandler({
      catalogue: await readModelCatalogue(config.MIXDOWN_MODEL_CATALOGUE || undefined),
      modelsDir: dir,
      assets: voiceAssetPaths(dir, config),
      mirror: config.MIXDOWN_MODEL_MIRROR || undefined,
      // Installs are rare: the thread starts with the first one and goes again once idle
      // (WORKER_MODEL_IDLE_SECONDS), so a worker that installs nothing carries no thread for it.
      pool: pooled(createModelInstallPool({ ...idle("model install"), startUnloaded: true })),
    });
  },
};
