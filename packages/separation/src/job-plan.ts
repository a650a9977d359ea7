import { stemsProblem } from "@mixdown/jobs";
import type { SeparationManifest } from "./families/manifests.ts";
import {
  isEnsembleAlgorithm,
  modelListProblemMessage,
  resolveModelList,
  resolveVocalSplit,
  splitsInOnePass,
  vocalPairOf,
  type EnsembleAlgorithm,
  type EnsembleStem,
  type SeparationJobKindName,
  type InstalledModel,
} from "./installed-models.ts";

/** What a separation job asks for and what the worker's settings say for its kind. */
export interface SeparationJobRequest {
  kind: SeparationJobKindName;
  /** the installed models, as read for this job */
  installed: readonly InstalledModel[];
  /** the job's own models (one, or several for an ensemble); empty: the setting's */
  models: readonly string[];
  /** the job's own ensemble algorithm; null: the setting's */
  ensemble: string | null;
  /**
   * The record's stems the job keeps (output control, `stems`); absent or null: every stem. Each
   * must be one the job publishes (`publishedStems`). A vocal separation that keeps none of the
   * vocal's parts (vocals, harmony, reverb) runs without the vocal split.
   */
  stems?: readonly string[] | null;
  settings: {
    /** SEPARATION_MODEL_VOCALS or SEPARATION_MODEL_STEMS, as the kind has it */
    models: readonly string[];
    /** SEPARATION_ENSEMBLE_VOCALS or SEPARATION_ENSEMBLE_STEMS */
    ensemble: EnsembleAlgorithm;
    /** SEPARATION_MODEL_VOCAL_SPLIT */
    vocalSplit: string;
  };
}

/** How a separation job runs: which models, what the first run writes, and the vocal split. */
export interface SeparationJobPlan {
  /** the row's `models`: the members' names, in order */
  models: string[];
  members: InstalledModel[];
  /** an ensemble's algorithm and what each written stem combines; one model: none */
  ensemble?: { algorithm: EnsembleAlgorithm; stems: EnsembleStem[]; instruments: string[] };
  /**
   * The first run (one model, or the ensemble), as the separation thread takes it: a vocal
   * separation writes the first model's vocal pair only, and splits the whole vocal in the same
   * pass when `split.onePass`. `manifests` are those of the models it runs, as read for the job.
   */
  run: SeparationRun;
  /**
   * A vocal separation's split of its whole vocal into lead, harmony and reverb: in the first run
   * (`onePass`), or afterwards over the written whole vocal (an ensemble's vocal is combined from
   * files; a split model that reads its input twice), with the lead written by `writeRemainder`.
   */
  split?: { model: InstalledModel; onePass: boolean };
  /** why a vocal separation has no split (the setting is `none`, or names no installed split model) */
  splitOff?: string;
  /** the stems a stem split publishes (an ensemble's in common, else the model's own) */
  instruments: string[];
  /** the record's stems (their `instrument` names) the job publishes: every one it can, or the request's `stems` */
  stems: string[];
  /** every file the job writes before uploading: each member's stems, an ensemble's, the split's */
  outputFiles: number;
  /** the share of the job's progress the first run takes when a second run follows */
  firstShare: number;
}

/**
 * What the separation thread runs: one model (`modelName`, with the vocal split in the same pass
 * when `split`), or an ensemble's members combined; `manifests` carries the manifests of the models
 * it names as the job read them, so the thread loads a model it has not loaded yet from these.
 */
export type SeparationRun = {
  stems?: string[];
  manifests?: SeparationManifest[];
} & (
  | {
      modelName: string;
      split?: { modelName: string; of: string; stems: string[]; remainder: string };
      ensemble?: undefined;
    }
  | {
      modelName?: undefined;
      split?: undefined;
      ensemble: { models: string[]; algorithm: EnsembleAlgorithm; stems: EnsembleStem[] };
    }
);

/** A vocal separation's stems that the vocal split makes: the lead (its `vocals`), harmony and reverb. */
const VOCAL_PARTS: readonly string[] = ["vocals", "harmony", "reverb"];

/**
 * The record's stems a job publishes, in the record's order: a vocal separation its vocals and
 * backing, with the vocal split the lead as vocals, harmony and reverb beside them; a stem split
 * every stem the network outputs (an ensemble's in common), not the derived backing.
 */
export function publishedStems(kind: SeparationJobKindName, plan: { instruments: readonly string[]; split: boolean }): string[] {
  if (kind === "stem-split") return [...plan.instruments];
  return plan.split ? ["vocals", "harmony", "reverb", "backing"] : ["vocals", "backing"];
}

/** Why a job cannot run as asked: `bad-input` will never succeed, `permanent` needs the operator. */
export class SeparationPlanError extends Error {
  override readonly name = "SeparationPlanError";
  constructor(
    readonly failure: "bad-input" | "permanent",
    message: string,
  ) {
    super(message);
  }
}

/**
 * Plans a separation job: its own model, else the setting for its kind; several names are an
 * ensemble, combined with the job's algorithm, else the setting's; and, for a vocal separation,
 * the vocal split the settings name. The API checked a named model at create; it is checked again
 * here because the models directory may have changed since, and a model that cannot serve the
 * kind will never succeed.
 */
export function planSeparationJob(request: SeparationJobRequest): SeparationJobPlan {
  const { kind, installed, settings } = request;
  const names = request.models.length > 0 ? request.models : settings.models;
  const resolved = resolveModelList(installed, names, kind);
  // a model missing is the operator's to install; one that cannot serve the kind never will
  if (resolved.problem)
    throw new SeparationPlanError(
      resolved.problem === "not-installed" ? "permanent" : "bad-input",
      modelListProblemMessage(resolved, kind),
    );
  const { members } = resolved;
  let ensemble: SeparationJobPlan["ensemble"];
  if (resolved.ensemble) {
    const algorithm = request.ensemble ?? settings.ensemble;
    if (!isEnsembleAlgorithm(algorithm)) throw new SeparationPlanError("permanent", `Unknown ensemble algorithm "${algorithm}"`);
    ensemble = { algorithm, ...resolved.ensemble };
  }
  const first = members[0]!;

  const vocalSplit = kind === "vocal-separation" ? resolveVocalSplit(settings.vocalSplit, installed) : undefined;
  const instruments = ensemble?.instruments ?? first.stems;
  const publishable = publishedStems(kind, { instruments, split: vocalSplit?.model !== undefined });
  const asked = request.stems ?? null;
  if (asked) {
    const problem = stemsProblem(asked, publishable, kind === "vocal-separation" ? "vocal separation" : "stem split");
    if (problem) throw new SeparationPlanError("bad-input", problem);
  }
  // the split computes the vocal's parts: a job that keeps none of them does not run it
  const splitWanted = !asked || asked.some((s) => VOCAL_PARTS.includes(s));
  // A single first model's whole vocal is split as that model yields it, in the same pass, when
  // the split model can (splitsInOnePass); an ensemble's vocal is combined from files afterwards,
  // so it is split in a second run over the written whole vocal (the same result, more I/O).
  const firstPair = ensemble ? undefined : vocalPairOf(first.outputStems);
  const splitModel = splitWanted ? vocalSplit?.model : undefined;
  const split = splitModel && {
    model: splitModel,
    onePass: firstPair !== undefined && splitsInOnePass(first, splitModel),
  };

  const run: SeparationRun = ensemble
    ? { ensemble: { models: members.map((m) => m.name), algorithm: ensemble.algorithm, stems: ensemble.stems } }
    : {
        modelName: first.name,
        // a vocal separation publishes the vocal pair only: the model's other stems are not written
        ...(kind === "vocal-separation" && firstPair ? { stems: [firstPair.vocals, firstPair.backing] } : {}),
        ...(split?.onePass
          ? { split: { modelName: split.model.name, of: firstPair!.vocals, stems: ["harmony", "reverb"], remainder: "lead" } }
          : {}),
      };
  return {
    models: members.map((m) => m.name),
    members,
    ...(ensemble ? { ensemble } : {}),
    run: { ...run, manifests: [...members, ...(split?.onePass ? [split.model] : [])].map((m) => m.manifest) },
    ...(split ? { split } : {}),
    ...(vocalSplit?.reason ? { splitOff: vocalSplit.reason } : {}),
    instruments,
    stems: asked ? publishable.filter((s) => asked.includes(s)) : publishable,
    // every stem of every member (an ensemble writes each member's before combining), the split's three
    outputFiles: members.reduce((n, m) => n + m.stems.length, 0) + (ensemble?.stems.length ?? 0) + (split ? 3 : 0),
    // each model's pass takes about as long as the split's: an ensemble's members share more
    firstShare: split?.onePass ? 0.95 : members.length / (members.length + 1),
  };
}
