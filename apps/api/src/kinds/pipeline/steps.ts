import {
  isPipelineStepName,
  PIPELINE_STEP_NAMES,
  PIPELINE_STEPS,
  pipelineChainProblem,
  type PipelineAudio,
  type PipelineStepName,
} from "@mixdown/jobs";
import type { VoiceModelRepository } from "@mixdown/db";
import { LOUDNESS_TARGET_DEFAULTS } from "@mixdown/mastering/config";
import type { VoiceAssets } from "@mixdown/voice/assets";
import { Type, type TObject, type TProperties } from "typebox";
import { ApiError, unprocessable } from "../../http/errors.ts";
import { FormSchema } from "../../http/form-schema.ts";
import { masteringForm } from "../mastering/routes.ts";
import type { InstalledSeparationModels } from "../separation/installed-models.ts";
import { SEPARATION_FIELD_MESSAGES, SEPARATION_OUTPUT_FIELDS, separationForm } from "../separation/routes.ts";
import { VOCAL_REPAIR_FIELD_MESSAGES, vocalRepairForm } from "../vocal-repair/routes.ts";
import { checkRepairSteps, type RepairModelSettings } from "../vocal-repair/service.ts";
import { conversionForm } from "../voice-conversion/routes.ts";
import { checkConvertibleModel, conversionParams } from "../voice-conversion/service.ts";

/** The most steps one pipeline chains. */
export const MAX_PIPELINE_STEPS = 10;

/** A step as the pipeline stores it: its name, the kind it runs as and its options, checked as that kind's create checks them. */
export interface CheckedStep {
  step: PipelineStepName;
  kind: string;
  options: Record<string, unknown>;
}

/** A kind's create form less its files and its webhook: the options a pipeline's step of that kind takes. */
function stepOptionsForm<S extends TObject>(form: S, leave: readonly string[]): TObject {
  const properties: TProperties = {};
  for (const [name, schema] of Object.entries(form.properties)) if (!leave.includes(name)) properties[name] = schema;
  return Type.Object(properties, { required: (form.required ?? []).filter((name: string) => !leave.includes(name)) });
}

// A separate's whole vocal and backing feed the steps after it: the output options (format,
// sample format, rate, the stems kept) are the separation's own create's, not a step's.
const SEPARATE_FORM = new FormSchema(
  stepOptionsForm(separationForm(0), ["inputFile", "webhookUrl", "analyze", ...SEPARATION_OUTPUT_FIELDS]),
  { ensemble: SEPARATION_FIELD_MESSAGES.ensemble },
);
const CONVERT_FORM = new FormSchema(stepOptionsForm(conversionForm(0), ["soundFile", "backingSoundFile", "webhookUrl"]));
// The vocal comes from the chain: no isolateVocal (a separate before the repair isolates it).
const REPAIR_FORM = new FormSchema(
  stepOptionsForm(vocalRepairForm(0), ["inputFile", "webhookUrl", "isolateVocal"]),
  VOCAL_REPAIR_FIELD_MESSAGES,
);
// Loudness mode only: a reference mastering needs a second upload, which a pipeline's create has not.
const MASTER_FORM = new FormSchema(stepOptionsForm(masteringForm(0), ["targetFile", "referenceFile", "webhookUrl"]));
const OPTION_FORMS: Record<PipelineStepName, FormSchema<TObject> | null> = {
  separate: SEPARATE_FORM,
  repair: REPAIR_FORM,
  convert: CONVERT_FORM,
  recombine: null,
  master: MASTER_FORM,
};

/** The option names each step takes (what the presets' and the create's documentation lists). */
export const STEP_OPTION_NAMES: Record<PipelineStepName, string[]> = {
  separate: SEPARATE_FORM.textFields,
  repair: REPAIR_FORM.textFields,
  convert: CONVERT_FORM.textFields,
  recombine: [],
  master: MASTER_FORM.textFields,
};

/** Why a step refuses an option its kind's own create takes (the options a pipeline's step leaves out on purpose). */
const LEFT_OUT: Partial<Record<PipelineStepName, { names: readonly string[]; why: string }>> = {
  separate: {
    names: SEPARATION_OUTPUT_FIELDS,
    why: "the steps after a separate take its whole vocal and backing as a separation writes them by default; output options are for POST /vocal-separations",
  },
  repair: {
    names: ["isolateVocal"],
    why: "a repair takes the vocal the chain gives it; put a separate before it to isolate a mix's vocal",
  },
  master: {
    names: ["referenceFile"],
    why: "a pipeline masters to a loudness target only (targetLufs, truePeakDb); reference mastering is POST /masterings",
  },
};

export interface StepCheckDeps {
  separationModels: Pick<InstalledSeparationModels, "resolve">;
  repairModels: RepairModelSettings;
  models: VoiceModelRepository;
  assets: Pick<VoiceAssets, "missingFor">;
}

/** Prefixes a 422 thrown while checking step `index` with the step it is about. */
async function aboutStep<T>(index: number, step: string, check: () => Promise<T> | T): Promise<T> {
  try {
    return await check();
  } catch (error) {
    if (error instanceof ApiError && error.statusCode === 422) throw unprocessable(`steps[${index}] (${step}): ${error.message}`);
    throw error;
  }
}

/** An option's JSON value as a form's text field carries it (an effect chain may be given as an object). */
function asFieldText(name: string, value: unknown): string {
  if (typeof value === "string") return value;
  // a repair's `steps` may be a JSON array of names as well as the form's comma-separated text
  if (name === "steps" && Array.isArray(value) && value.every((v) => typeof v === "string")) return value.join(",");
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if ((name === "pre" || name === "post") && typeof value === "object" && value !== null) return JSON.stringify(value);
  throw unprocessable(`${name} must be a string or a number`);
}

/** The JSON of the create's `steps` field as steps with options, each shape named when wrong. */
export function parseSteps(text: string): Array<{ step: PipelineStepName; options: Record<string, unknown> }> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw unprocessable('steps must be a JSON array of steps, e.g. [{"step":"separate"},{"step":"convert","voiceModelId":1}]');
  }
  if (!Array.isArray(value)) throw unprocessable("steps must be a JSON array of steps");
  if (value.length === 0) throw unprocessable("steps: at least one step is required");
  if (value.length > MAX_PIPELINE_STEPS) throw unprocessable(`steps: at most ${MAX_PIPELINE_STEPS} steps (got ${value.length})`);
  return value.map((entry: unknown, index) => {
    if (typeof entry !== "object" || entry === null || Array.isArray(entry))
      throw unprocessable(`steps[${index}] must be an object with a "step" (one of ${PIPELINE_STEP_NAMES.join(", ")})`);
    const { step, ...options } = entry as Record<string, unknown>;
    if (typeof step !== "string" || !isPipelineStepName(step))
      throw unprocessable(
        `steps[${index}]: step ${JSON.stringify(step ?? null)} is not a step (one of ${PIPELINE_STEP_NAMES.join(", ")})`,
      );
    return { step, options };
  });
}

/**
 * Checks a chain on an input of `input` audio: its typing first (which step cannot take what
 * comes before it), then each step's options with its kind's own form schema and its create's
 * checks (installed separation models, the repairs' models, a usable voice model, effect chains,
 * loudness ranges), each failure a 422 naming the step's index. Returns the steps as the worker will run them.
 */
export async function checkSteps(
  deps: StepCheckDeps,
  callerId: number,
  input: PipelineAudio,
  steps: Array<{ step: PipelineStepName; options: Record<string, unknown> }>,
): Promise<CheckedStep[]> {
  const chain = pipelineChainProblem(
    input,
    steps.map((s) => s.step),
  );
  if (chain) throw unprocessable(chain);
  const checked: CheckedStep[] = [];
  for (const [index, { step, options }] of steps.entries()) {
    const kind = PIPELINE_STEPS[step].kind;
    const stored = await aboutStep(index, step, async () => {
      const form = OPTION_FORMS[step];
      const allowed = form?.textFields ?? [];
      const leftOut = LEFT_OUT[step];
      const refused = Object.keys(options).filter((name) => leftOut?.names.includes(name));
      if (leftOut && refused.length > 0)
        throw unprocessable(
          `${refused.join(", ")} ${refused.length === 1 ? "is" : "are"} not taken by a pipeline's ${step}: ${leftOut.why}`,
        );
      const unknown = Object.keys(options).filter((name) => !allowed.includes(name));
      if (unknown.length > 0)
        throw unprocessable(
          `unknown option ${unknown.join(", ")} (${step} takes ${allowed.length > 0 ? allowed.join(", ") : "no options"})`,
        );
      if (!form) return {};
      const fields = new Map(
        Object.entries(options)
          .filter(([, v]) => v !== undefined && v !== null)
          .map(([name, v]) => [name, asFieldText(name, v)] as const),
      );
      const values = form.read({ fields }) as Record<string, unknown>;
      if (step === "separate") {
        const { models, ensemble } = await deps.separationModels.resolve(
          "vocal_separation",
          values.model as string | undefined,
          values.ensemble as string | undefined,
        );
        return { models, ensemble };
      }
      if (step === "repair") return { steps: await checkRepairSteps(deps.repairModels, values.steps as string, false) };
      if (step === "master")
        return {
          targetLufs: (values.targetLufs as number | undefined) ?? LOUDNESS_TARGET_DEFAULTS.integratedLufs,
          truePeakDb: (values.truePeakDb as number | undefined) ?? LOUDNESS_TARGET_DEFAULTS.truePeakDb,
        };
      const voiceModelId = values.voiceModelId as number;
      await checkConvertibleModel(deps, callerId, voiceModelId);
      return { voiceModelId, params: { ...conversionParams(values as Parameters<typeof conversionParams>[0]) } };
    });
    checked.push({ step, kind, options: stored });
  }
  return checked;
}
