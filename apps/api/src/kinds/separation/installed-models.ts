import { modelListProblem, separationKindOf, type SeparationDbKind } from "@mixdown/jobs";
import {
  DEFAULT_ENSEMBLE,
  ENSEMBLE_ALGORITHMS,
  isEnsembleAlgorithm,
  modelListProblemMessage,
  modelServes,
  parseModelList,
  readInstalledModels,
  resolveModelList,
} from "@mixdown/separation/installed-models";
import { planSeparationJob, SeparationPlanError } from "@mixdown/separation/job-plan";
import { Type, type Static } from "typebox";
import { unprocessable } from "../../http/errors.ts";

export const SeparationModelRecord = Type.Object(
  {
    name: Type.String({ description: "What the `model` field of a vocal separation or stem split names" }),
    family: Type.String({ description: "Model family (`mdx`, ...)" }),
    stems: Type.Array(Type.String(), { description: "Stems the model outputs; a stem split publishes each of them" }),
    sampleRate: Type.Integer({ description: "Rate the model runs at (outputs keep the input's rate)" }),
    serves: Type.Object(
      { vocalSeparation: Type.Boolean(), stemSplit: Type.Boolean() },
      {
        description:
          "Which job kinds it can serve: a vocal separation needs a vocals stem and its backing, a stem split a multi-stem model",
      },
    ),
    default: Type.Object(
      { vocalSeparation: Type.Boolean(), stemSplit: Type.Boolean() },
      {
        description:
          "Whether it serves the jobs of that kind that name no model (SEPARATION_MODEL_VOCALS / _STEMS); several models true for a kind: the setting names an ensemble of them",
      },
    ),
  },
  { $id: "SeparationModel", description: "An installed separation model" },
);
export type SeparationModelRecord = Static<typeof SeparationModelRecord>;

/**
 * The separation models installed in MODELS_DIR, from their manifests (the API never loads
 * onnxruntime). Read on every call: a model imported while the API runs is listed at once.
 */
export class InstalledSeparationModels {
  constructor(
    private readonly modelsDir: string,
    /** the settings: the models of the jobs that name none (SEPARATION_MODEL_*), the vocal split (SEPARATION_MODEL_VOCAL_SPLIT) */
    private readonly defaults: { vocalSeparation: readonly string[]; stemSplit: readonly string[]; vocalSplit: string },
  ) {}

  async list(): Promise<SeparationModelRecord[]> {
    const { models } = await readInstalledModels(this.modelsDir);
    const { vocalSeparation: vocalDefaults, stemSplit: stemDefaults } = this.defaults;
    return models.map((m) => ({
      name: m.name,
      family: m.family,
      stems: m.stems,
      sampleRate: m.sampleRate,
      serves: { vocalSeparation: modelServes(m, "vocal-separation"), stemSplit: modelServes(m, "stem-split") },
      default: { vocalSeparation: vocalDefaults.includes(m.name), stemSplit: stemDefaults.includes(m.name) },
    }));
  }

  /**
   * The `model` and `ensemble` fields of a create, checked before anything is stored (422 naming the
   * problem): each name installed and able to serve the kind, none twice; `ensemble` (default
   * avg_wave) only with two or more models; an ensemble's models must have a stem in common.
   * Returns what the row stores: the names, in order (none: the worker's setting), and the
   * algorithm of an ensemble.
   */
  async resolve(
    kind: SeparationDbKind,
    modelField: string | undefined,
    ensembleField: string | undefined,
  ): Promise<{ models: string[]; ensemble: string | null }> {
    if (modelField === undefined) {
      if (ensembleField !== undefined)
        throw unprocessable("ensemble needs a model field naming two or more models (comma-separated), e.g. model=vocals,stems");
      return { models: [], ensemble: null };
    }
    // One name is taken as written (an unknown one is named by the installed models' check).
    const names = modelField.includes(",") ? parseModelList(modelField) : [modelField];
    const problem = names.length > 1 ? modelListProblem(modelField, names) : null;
    if (problem) throw unprocessable(`model ${problem}`);
    const { models } = await readInstalledModels(this.modelsDir);
    const jobKind = separationKindOf(kind);
    const resolved = resolveModelList(models, names, jobKind);
    if (resolved.problem === "not-installed" || resolved.problem === "cannot-serve")
      throw unprocessable(modelListProblemMessage(resolved, jobKind));
    if (names.length === 1) {
      if (ensembleField !== undefined)
        throw unprocessable(`ensemble needs two or more models (model=a,b); model names one (${JSON.stringify(names[0])})`);
      return { models: names, ensemble: null };
    }
    const ensemble = ensembleField ?? DEFAULT_ENSEMBLE;
    if (!isEnsembleAlgorithm(ensemble))
      throw unprocessable(
        `ensemble ${JSON.stringify(ensemble)} is not an ensemble algorithm (one of ${ENSEMBLE_ALGORITHMS.join(", ")})`,
      );
    // the ensemble fields are checked before what the members have in common
    if (resolved.problem === "no-common-stem") throw unprocessable(modelListProblemMessage(resolved, jobKind));
    return { models: names, ensemble };
  }

  /**
   * A create's `stems` (output control), checked against the stems the job will publish, planned
   * as the worker plans it (its models, else the settings', and the vocal split): 422 naming the
   * unknown ones and the valid ones.
   */
  async checkStems(
    kind: SeparationDbKind,
    resolved: { models: string[]; ensemble: string | null },
    stems: readonly string[],
  ): Promise<void> {
    const { models: installed } = await readInstalledModels(this.modelsDir);
    const vocals = kind === "vocal_separation";
    try {
      planSeparationJob({
        kind: separationKindOf(kind),
        installed,
        models: resolved.models,
        ensemble: resolved.ensemble,
        stems,
        // the algorithm does not change which stems an ensemble publishes
        settings: {
          models: vocals ? this.defaults.vocalSeparation : this.defaults.stemSplit,
          ensemble: DEFAULT_ENSEMBLE,
          vocalSplit: this.defaults.vocalSplit,
        },
      });
    } catch (err) {
      if (err instanceof SeparationPlanError) throw unprocessable(err.message);
      throw err;
    }
  }
}
