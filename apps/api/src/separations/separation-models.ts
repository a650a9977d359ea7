import type { SeparationKind } from "@mixdown/db";
import { separationKindOf } from "@mixdown/jobs";
import { modelServes, readSeparationModels, type SeparationModelEntry } from "@mixdown/separation/catalog";
import { Type, type Static } from "typebox";
import { unprocessable } from "../http/errors.ts";

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
      { description: "Whether it serves the jobs of that kind that name no model (SEPARATION_MODEL_VOCALS / _STEMS)" },
    ),
  },
  { $id: "SeparationModel", description: "An installed separation model" },
);
export type SeparationModelRecord = Static<typeof SeparationModelRecord>;

/**
 * The separation models installed in MODELS_DIR, from their manifests (the API never loads
 * onnxruntime). Read on every call: a model imported while the API runs is listed at once.
 */
export class SeparationModels {
  constructor(
    private readonly modelsDir: string,
    private readonly defaults: { vocalSeparation: string; stemSplit: string },
  ) {}

  async list(): Promise<SeparationModelRecord[]> {
    const { models } = await readSeparationModels(this.modelsDir);
    return models.map((m) => ({
      name: m.name,
      family: m.family,
      stems: m.stems,
      sampleRate: m.sampleRate,
      serves: { vocalSeparation: modelServes(m, "vocal-separation"), stemSplit: modelServes(m, "stem-split") },
      default: { vocalSeparation: m.name === this.defaults.vocalSeparation, stemSplit: m.name === this.defaults.stemSplit },
    }));
  }

  /** The `model` a create names, checked: 422 when no installed model has that name or it cannot serve the kind. */
  async check(kind: SeparationKind, name: string): Promise<SeparationModelEntry> {
    const { models } = await readSeparationModels(this.modelsDir);
    const jobKind = separationKindOf(kind);
    const model = models.find((m) => m.name === name);
    if (!model) {
      const installed = models.map((m) => m.name).join(", ") || "none";
      throw unprocessable(`model ${JSON.stringify(name)} is not an installed separation model (installed: ${installed})`);
    }
    if (!modelServes(model, jobKind)) {
      const fit = models.filter((m) => modelServes(m, jobKind)).map((m) => m.name);
      const need = jobKind === "vocal-separation" ? "a model with a vocals stem" : "a multi-stem model";
      throw unprocessable(
        `model "${name}" (stems: ${model.stems.join(", ")}) cannot serve a ${jobKind}: it needs ${need} (installed that can: ${fit.join(", ") || "none"})`,
      );
    }
    return model;
  }
}
