import { stat } from "node:fs/promises";
import { resolve } from "node:path";
import { outputStemNames, readManifestDirectory, readsInputOnce, type SeparationManifest } from "./families/manifests.ts";
import { ManifestError } from "./manifest.ts";
import type { EnsembleStem } from "./ensemble-names.ts";

export {
  ENSEMBLE_ALGORITHMS,
  DEFAULT_ENSEMBLE,
  isEnsembleAlgorithm,
  parseModelList,
  type EnsembleAlgorithm,
  type EnsembleStem,
} from "./ensemble-names.ts";

/**
 * What the installed separation models are, read from their manifests alone: no ONNX session is
 * opened, so the API process (which never loads onnxruntime) and the CLI can list and check them.
 * This file imports nothing that pulls in onnxruntime; `@mixdown/separation/installed-models` is its entry.
 */
export interface InstalledModel {
  name: string;
  /** the model family (the manifest's `architecture`) */
  family: string;
  sampleRate: number;
  /** the stems the network itself outputs, in output order */
  stems: string[];
  /** every stem a separation writes: the model's stems plus the derived ones (see outputStemNames) */
  outputStems: string[];
  /** absolute path of the weights file the manifest names */
  file: string;
  /** bytes of the weights file(s) */
  sizeBytes: number;
  /** its family yields as it reads: it can split another model's stem in the same pass (splitStemStream) */
  readsInputOnce: boolean;
  /**
   * The manifest as read: a job hands it to the separation thread with its request, so a model
   * the thread has not loaded yet is loaded from what the job planned with, not read again.
   */
  manifest: SeparationManifest;
}

export interface InstalledModels {
  models: InstalledModel[];
  /** manifests that failed validation, so an operator sees why a model is missing */
  invalid: { path: string; error: string }[];
}

/** Every `*.json` manifest directly in `modelsDir`, by name; a missing directory has none installed. */
export async function readInstalledModels(modelsDir: string): Promise<InstalledModels> {
  const directory = await readManifestDirectory(modelsDir);
  const installed: InstalledModels = { models: [], invalid: directory.invalid };
  for (const { path, manifest } of directory.manifests) {
    const file = resolve(modelsDir, manifest.file);
    // A manifest without its weights is not an installed model: a job naming it could only fail.
    // A bag (HTDemucs) has one file per member; its size is theirs together.
    const files = "members" in manifest ? manifest.members.map((m) => m.file) : [manifest.file];
    let sizeBytes = 0;
    const missing: string[] = [];
    for (const f of new Set(files)) {
      const size = await stat(resolve(modelsDir, f)).then(
        (s) => s.size,
        () => undefined,
      );
      if (size === undefined) missing.push(f);
      else sizeBytes += size;
    }
    if (missing.length > 0) {
      installed.invalid.push({ path, error: new ManifestError(path, `weights file ${missing.join(", ")} is missing`).message });
      continue;
    }
    installed.models.push({
      name: manifest.name,
      family: manifest.architecture,
      sampleRate: manifest.sampleRate,
      stems: manifest.stems,
      outputStems: outputStemNames(manifest),
      file,
      sizeBytes,
      readsInputOnce: readsInputOnce(manifest),
      manifest,
    });
  }
  installed.models.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return installed;
}

/**
 * Which of a separation's output stems a vocal separation publishes as vocals and backing:
 * `vocals` and the derived `backing` of a multi-stem model, or `vocals` and the secondary stem
 * (mixture − vocals, whatever its name) of a single-stem vocals model. Undefined: the model has
 * no vocals, so it cannot serve a vocal separation.
 */
export function vocalPairOf(outputStems: readonly string[]): { vocals: string; backing: string } | undefined {
  if (!outputStems.includes("vocals")) return undefined;
  if (outputStems.includes("backing")) return { vocals: "vocals", backing: "backing" };
  if (outputStems.length === 2) return { vocals: "vocals", backing: outputStems.find((s) => s !== "vocals")! };
  return undefined;
}

/**
 * Whether `split` can run over `first`'s stems in the same pass (separateFile's `split`,
 * splitStemStream): both at one rate, and the split model's family yields as it reads. Otherwise
 * the split runs afterwards over the first model's written stem (writeRemainder for the remainder).
 */
export function splitsInOnePass(
  first: Pick<InstalledModel, "sampleRate">,
  split: Pick<InstalledModel, "sampleRate" | "readsInputOnce">,
): boolean {
  return split.readsInputOnce && split.sampleRate === first.sampleRate;
}

export type SeparationJobKindName = "vocal-separation" | "stem-split";

/**
 * Whether a model can serve a job kind. A vocal separation needs vocals and a backing (see
 * vocalPairOf). A stem split needs a multi-stem model: a single-stem model's split would be
 * the same two files as a vocal separation, which is not what a caller asking for stems wants.
 */
export function modelServes(model: Pick<InstalledModel, "stems" | "outputStems">, kind: SeparationJobKindName): boolean {
  return kind === "vocal-separation" ? vocalPairOf(model.outputStems) !== undefined : model.stems.length > 1;
}

/**
 * What an ensemble of `members` (each able to serve the kind) writes for a job kind: `stems`, each
 * combined from the members' stems named in `from`, and `instruments`, the ones a stem split
 * publishes as stems. A vocal separation combines each member's vocals and backing (its vocal pair,
 * whatever the backing is called); a stem split the stems every member's network outputs, by name,
 * plus the derived backing when each has one (for the record's backing URL). No stem in common: none.
 */
export function ensembleStemsFor(
  members: readonly Pick<InstalledModel, "stems" | "outputStems">[],
  kind: SeparationJobKindName,
): { stems: EnsembleStem[]; instruments: string[] } {
  if (kind === "vocal-separation") {
    const pairs = members.map((m) => vocalPairOf(m.outputStems));
    if (pairs.some((p) => p === undefined)) return { stems: [], instruments: [] };
    return {
      stems: [
        { name: "vocals", from: pairs.map((p) => p!.vocals) },
        { name: "backing", from: pairs.map((p) => p!.backing) },
      ],
      instruments: ["vocals", "backing"],
    };
  }
  const common = members[0]!.stems.filter((s) => members.every((m) => m.stems.includes(s)));
  const stems = common.map((name) => ({ name, from: members.map(() => name) }));
  if (common.includes("vocals") && !common.includes("backing") && members.every((m) => m.outputStems.includes("backing")))
    stems.push({ name: "backing", from: members.map(() => "backing") });
  return { stems, instruments: common };
}

/**
 * Where a list of model names (one model, or an ensemble's) goes wrong for a job kind, if it does:
 * a name no installed model has, a model that cannot serve the kind (`fit`: the installed ones that
 * can), or an ensemble whose members have no stem in common. modelListProblemMessage words it, the
 * same for every caller (the API's 422, the worker's start-up check, a job's failure).
 */
export type ModelListProblem =
  | { problem: "not-installed"; name: string; installed: string[] }
  | { problem: "cannot-serve"; name: string; model: InstalledModel; fit: string[] }
  | { problem: "no-common-stem"; members: InstalledModel[] };

/**
 * The installed models `names` picks for a job kind, in order, with what an ensemble of them writes
 * (see ensembleStemsFor; one model: none), or the first problem.
 */
export function resolveModelList(
  models: readonly InstalledModel[],
  names: readonly string[],
  kind: SeparationJobKindName,
):
  | { members: InstalledModel[]; ensemble?: { stems: EnsembleStem[]; instruments: string[] }; problem?: undefined }
  | ModelListProblem {
  const members: InstalledModel[] = [];
  for (const name of names) {
    const model = models.find((m) => m.name === name);
    if (!model) return { problem: "not-installed", name, installed: models.map((m) => m.name) };
    if (!modelServes(model, kind))
      return { problem: "cannot-serve", name, model, fit: models.filter((m) => modelServes(m, kind)).map((m) => m.name) };
    members.push(model);
  }
  if (members.length < 2) return { members };
  const ensemble = ensembleStemsFor(members, kind);
  if (ensemble.stems.length === 0) return { problem: "no-common-stem", members };
  return { members, ensemble };
}

/**
 * A model-list problem in words: the API answers a create with it as it is (422), the worker's
 * start-up check after the setting that names the models, and a job that cannot run fails with it.
 */
export function modelListProblemMessage(problem: ModelListProblem, kind: SeparationJobKindName): string {
  switch (problem.problem) {
    case "not-installed":
      return `model ${JSON.stringify(problem.name)} is not an installed separation model (installed: ${problem.installed.join(", ") || "none"})`;
    case "cannot-serve": {
      const need = kind === "vocal-separation" ? "a model with a vocals stem" : "a multi-stem model";
      return `model "${problem.name}" (stems: ${problem.model.stems.join(", ")}) cannot serve a ${kind}: it needs ${need} (installed that can: ${problem.fit.join(", ") || "none"})`;
    }
    case "no-common-stem": {
      const { members } = problem;
      return `the models ${members.map((m) => m.name).join(", ")} have no stem in common (${members.map((m) => `${m.name}: ${m.stems.join(", ")}`).join("; ")}), so their ${kind} cannot be combined`;
    }
  }
}

/** The stems a vocal-split model outputs; the service writes `harmony` and `reverb` and derives the lead. */
export const VOCAL_SPLIT_STEMS = ["lead", "harmony", "reverb"] as const;

/** What turns the vocal split off in SEPARATION_MODEL_VOCAL_SPLIT. */
export const VOCAL_SPLIT_OFF = "none";

/** Whether a model splits a whole vocal into lead, harmony and reverb. */
export function splitsVocals(model: Pick<InstalledModel, "stems">): boolean {
  return VOCAL_SPLIT_STEMS.every((s) => model.stems.includes(s));
}

/**
 * Which vocal-split model the settings name and whether it can run: `model`, its installed entry,
 * when installed and able to split, else `reason` says why vocal separations stay at vocals and
 * backing.
 */
export function resolveVocalSplit<Entry extends Pick<InstalledModel, "name" | "stems">>(
  setting: string,
  installed: readonly Entry[],
): { model: Entry; reason?: undefined } | { model?: undefined; reason: string } {
  if (setting === VOCAL_SPLIT_OFF) return { reason: `SEPARATION_MODEL_VOCAL_SPLIT=${VOCAL_SPLIT_OFF}` };
  const model = installed.find((m) => m.name === setting);
  if (!model) return { reason: `the vocal-split model "${setting}" (SEPARATION_MODEL_VOCAL_SPLIT) is not installed` };
  if (!splitsVocals(model))
    return {
      reason: `the model "${setting}" (SEPARATION_MODEL_VOCAL_SPLIT; stems: ${model.stems.join(", ")}) has no lead, harmony and reverb stems`,
    };
  return { model };
}
