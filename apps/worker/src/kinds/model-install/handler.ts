import { resolve } from "node:path";
import { JobFailure } from "@mixdown/jobs";
import {
  entrySize,
  installedEntries,
  readModelCatalogue,
  voiceAssetPaths,
  type ModelCatalogue,
  type VoiceAssetPaths,
} from "@mixdown/model-catalogue";
import { pullEntry, PullProblem, type PullContext } from "@mixdown/model-catalogue/pull";
import type { JobHandler } from "../../run-job.ts";
import type { WorkerKind } from "../context.ts";

export interface ModelInstallJobDeps {
  catalogue: ModelCatalogue;
  /** MODELS_DIR, where `models pull` installs too. */
  modelsDir: string;
  assets: VoiceAssetPaths;
  /** MIXDOWN_MODEL_MIRROR */
  mirror: string | undefined;
}

/**
 * Installs a model catalogue entry exactly as `./mixdown.sh models pull NAME` does (the same
 * `pullEntry`: each file downloaded, resumed after a cut, checked against the sizes and hashes the
 * catalogue publishes, then installed by the family's importer), into this worker's MODELS_DIR.
 * Progress is the bytes downloaded (the row's 1..90), then the import; an entry installed
 * meanwhile (by a command, or an earlier attempt) succeeds without a download.
 */
export function modelInstallHandler(deps: ModelInstallJobDeps): JobHandler<"model-install"> {
  return {
    async run({ row, signal, log, reportProgress }) {
      const entry = deps.catalogue.models.find((m) => m.name === row.name);
      if (!entry) throw new JobFailure("permanent", `${row.name} is not in this worker's model catalogue`);
      if ((await installedEntries(deps.catalogue, deps.modelsDir, deps.assets)).has(entry.name))
        return { summary: `${entry.name} is installed already` };
      const total = entrySize(entry);
      const received = new Map<string, number>();
      const ctx: PullContext = {
        modelsDir: deps.modelsDir,
        assets: deps.assets,
        mirror: deps.mirror,
        log: (line) => log.info({ model: entry.name }, line),
        progress: (file) => ({
          update(p) {
            received.set(file, p.received);
            const size = total ?? p.total;
            if (size) reportProgress(Math.min(1, [...received.values()].reduce((a, b) => a + b, 0) / size));
          },
          stop: () => {},
        }),
        signal,
      };
      try {
        return { summary: await pullEntry(entry, ctx) };
      } catch (err) {
        if (signal.aborted) throw err;
        // What `models pull` reports and exits 1 on: the same answer on every try (a hash that does
        // not match, a 404, a file its importer refuses), after the download's own retries.
        if (err instanceof PullProblem || (err as Error).name === "PitchImportError")
          throw new JobFailure("permanent", `cannot install ${entry.name}: ${(err as Error).message}`);
        throw err;
      }
    },
  };
}

export const modelInstallKind: WorkerKind<"model-install"> = {
  async start({ config, modelsDir }) {
    const dir = resolve(modelsDir);
    return modelInstallHandler({
      catalogue: await readModelCatalogue(config.MIXDOWN_MODEL_CATALOGUE || undefined),
      modelsDir: dir,
      assets: voiceAssetPaths(dir, config),
      mirror: config.MIXDOWN_MODEL_MIRROR || undefined,
    });
  },
};
