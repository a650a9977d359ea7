import { useEffect, useState } from "preact/hooks";
import { CONVERSION_CONTROLS, formData, type Pipeline, type paths } from "@mixdown/kits-client";
import { fetchJob, kits, unwrap, type AnyJob, type JobKind } from "../api.ts";
import { FileDrop } from "../components/FileDrop.tsx";
import { AUDIO_ACCEPT, Failure, Slider, useSubmit, useVoiceModels, WebhookField } from "../components/form-parts.tsx";
import { Mixer, type Track } from "../components/Mixer.tsx";
import { VoicePicker } from "../components/VoicePicker.tsx";
import { navigate } from "../main.tsx";
import { StatusBadge } from "../components/StatusBadge.tsx";
import { isJobKind, KINDS, type KindView } from "./index.ts";

/** Pipelines: one input through a chain of steps, each step an ordinary job of its kind. */
export const pipeline: KindView<"pipelines"> = {
  label: "Pipeline",
  Form: () => <PipelineForm />,
  Detail: ({ job }) => <PipelineSteps job={job} />,
  Outputs: ({ job }) => <PipelineOutputs job={job} />,
};

/** A preset as `GET /pipeline-presets` lists it. */
type PipelinePreset =
  paths["/api/kits/v1/pipeline-presets"]["get"]["responses"][200]["content"]["application/json"]["data"][number];

type StepName = "separate" | "repair" | "convert" | "recombine" | "master";

/** A step of the chain being built, with the options the form offers for it. */
interface DraftStep {
  step: StepName;
  model: string;
  repairs: string[];
  voiceModelId: number | null;
  pitchShift: number;
  targetLufs: number;
  truePeakDb: number;
}

const STEP_LABELS: Record<StepName, string> = {
  separate: "Separate (vocal and backing)",
  repair: "Repair the vocal",
  convert: "Convert the vocal with a voice model",
  recombine: "Recombine the vocal with the backing",
  master: "Master to a loudness target",
};

const draft = (step: StepName): DraftStep => ({
  step,
  model: "",
  repairs: ["denoise"],
  voiceModelId: null,
  pitchShift: CONVERSION_CONTROLS.pitchShift.default,
  targetLufs: -14,
  truePeakDb: -1,
});

/** A drafted step as the create's `steps` JSON takes it: only the options its step has. */
function stepJson(s: DraftStep): Record<string, unknown> {
  switch (s.step) {
    case "separate":
      return s.model.trim() ? { step: s.step, model: s.model.trim() } : { step: s.step };
    case "repair":
      return { step: s.step, steps: s.repairs };
    case "convert":
      return { step: s.step, voiceModelId: s.voiceModelId, pitchShift: s.pitchShift };
    case "recombine":
      return { step: s.step };
    case "master":
      return { step: s.step, targetLufs: s.targetLufs, truePeakDb: s.truePeakDb };
  }
}

function PipelineForm() {
  const models = useVoiceModels();
  const [presets, setPresets] = useState<PipelinePreset[]>([]);
  const [file, setFile] = useState<File | null>(null);
  const [mode, setMode] = useState<"preset" | "steps">("preset");
  const [preset, setPreset] = useState<string>("");
  const [voice, setVoice] = useState<number | null>(null);
  const [input, setInput] = useState<"mix" | "vocal">("mix");
  const [steps, setSteps] = useState<DraftStep[]>([draft("separate"), draft("repair")]);
  const [webhookUrl, setWebhookUrl] = useState("");
  const { error, busy, run } = useSubmit();
  const path = "/api/kits/v1/pipelines" as const;

  useEffect(() => {
    void unwrap(kits.GET("/api/kits/v1/pipeline-presets")).then(({ data }) => {
      setPresets(data);
      setPreset((now) => now || (data[0]?.name ?? ""));
    });
  }, []);

  const chosen = presets.find((p) => p.name === preset);
  const update = (index: number, change: Partial<DraftStep>) =>
    setSteps(steps.map((s, i) => (i === index ? { ...s, ...change } : s)));
  const move = (index: number, by: -1 | 1) => {
    const next = [...steps];
    const [s] = next.splice(index, 1);
    next.splice(index + by, 0, s!);
    setSteps(next);
  };

  const submit = run(async () => {
    if (!file) throw new Error("Choose an audio file first.");
    let fields: Record<string, string | number | undefined>;
    if (mode === "preset") {
      if (!chosen) throw new Error("Choose a preset.");
      if (chosen.requires.includes("voiceModelId") && voice === null)
        throw new Error("Pick the voice model the preset converts with.");
      fields = { preset: chosen.name, input: chosen.input, voiceModelId: voice ?? undefined };
    } else {
      if (steps.length === 0) throw new Error("Add at least one step.");
      if (steps.some((s) => s.step === "convert" && s.voiceModelId === null))
        throw new Error("Pick a voice model for each convert step.");
      fields = { steps: JSON.stringify(steps.map(stepJson)), input };
    }
    const job = await unwrap(
      kits.POST(path, {
        body: { inputFile: file, ...fields, webhookUrl: webhookUrl || undefined } as never,
        bodySerializer: formData,
      }),
    );
    navigate(`#/jobs/pipelines/${job.id}`);
  });

  return (
    <form onSubmit={submit} aria-label="Pipeline">
      <FileDrop label="Input" name="inputFile" accept={AUDIO_ACCEPT} docPath={path} required file={file} onFile={setFile} />
      <fieldset>
        <legend>Chain</legend>
        <label>
          <input type="radio" name="mode" checked={mode === "preset"} onChange={() => setMode("preset")} /> a preset
        </label>
        <label>
          <input type="radio" name="mode" checked={mode === "steps"} onChange={() => setMode("steps")} /> my own steps
        </label>
      </fieldset>
      {mode === "preset" ? (
        <>
          <fieldset class="presets">
            <legend>Preset</legend>
            {presets.map((p) => (
              <label key={p.name}>
                <input type="radio" name="preset" value={p.name} checked={preset === p.name} onChange={() => setPreset(p.name)} />{" "}
                <strong>{p.name}</strong>: {p.description}{" "}
                <small>
                  ({p.input} in; {p.steps.map((s) => s.step).join(" → ")})
                </small>
              </label>
            ))}
          </fieldset>
          {chosen?.requires.includes("voiceModelId") && (
            <VoicePicker name="voiceModelId" legend="Voice model" models={models} value={voice} onChange={setVoice} />
          )}
        </>
      ) : (
        <>
          <fieldset>
            <legend>The input is</legend>
            <label>
              <input type="radio" name="input" checked={input === "mix"} onChange={() => setInput("mix")} /> a song (mix)
            </label>
            <label>
              <input type="radio" name="input" checked={input === "vocal"} onChange={() => setInput("vocal")} /> a vocal alone
            </label>
          </fieldset>
          <ol class="steps" aria-label="Steps">
            {steps.map((s, index) => (
              <li key={index}>
                <StepEditor step={s} index={index} models={models} onChange={(change) => update(index, change)} />
                <div class="toolbar">
                  <button type="button" class="small" disabled={index === 0} onClick={() => move(index, -1)}>
                    ↑
                  </button>
                  <button type="button" class="small" disabled={index === steps.length - 1} onClick={() => move(index, 1)}>
                    ↓
                  </button>
                  <button
                    type="button"
                    class="small danger"
                    aria-label={`Remove step ${index + 1}`}
                    onClick={() => setSteps(steps.filter((_, i) => i !== index))}
                  >
                    Remove
                  </button>
                </div>
              </li>
            ))}
          </ol>
          <button type="button" class="small" onClick={() => setSteps([...steps, draft("master")])}>
            Add a step
          </button>
        </>
      )}
      <WebhookField value={webhookUrl} onChange={setWebhookUrl} />
      <Failure error={error} />
      <button type="submit" disabled={busy}>
        {busy ? "Uploading…" : "Run the pipeline"}
      </button>
    </form>
  );
}

/** One step of an own chain: which step, and the options it has. */
function StepEditor(props: {
  step: DraftStep;
  index: number;
  models: Parameters<typeof VoicePicker>[0]["models"];
  onChange(change: Partial<DraftStep>): void;
}) {
  const { step: s, index, onChange } = props;
  const toggleRepair = (name: string) =>
    onChange({ repairs: s.repairs.includes(name) ? s.repairs.filter((r) => r !== name) : [...s.repairs, name] });
  return (
    <>
      <label>
        <span>Step {index + 1}</span>
        <select name={`step-${index}`} value={s.step} onChange={(e) => onChange({ step: e.currentTarget.value as StepName })}>
          {(Object.keys(STEP_LABELS) as StepName[]).map((name) => (
            <option key={name} value={name}>
              {STEP_LABELS[name]}
            </option>
          ))}
        </select>
      </label>
      {s.step === "separate" && (
        <label>
          <span>Model (optional: the installed default)</span>
          <input name={`model-${index}`} value={s.model} onInput={(e) => onChange({ model: e.currentTarget.value })} />
        </label>
      )}
      {s.step === "repair" &&
        ["dereverb", "denoise"].map((name) => (
          <label key={name}>
            <input type="checkbox" checked={s.repairs.includes(name)} onChange={() => toggleRepair(name)} />{" "}
            {name === "dereverb" ? "Remove room reverb" : "Remove noise (RNNoise)"}
          </label>
        ))}
      {s.step === "convert" && (
        <>
          <VoicePicker
            name={`voiceModelId-${index}`}
            legend="Voice model"
            models={props.models}
            value={s.voiceModelId}
            onChange={(voiceModelId) => onChange({ voiceModelId })}
          />
          <Slider
            label="Pitch shift"
            name={`pitchShift-${index}`}
            min={CONVERSION_CONTROLS.pitchShift.min}
            max={CONVERSION_CONTROLS.pitchShift.max}
            step={1}
            value={s.pitchShift}
            onChange={(pitchShift) => onChange({ pitchShift })}
            unit=" st"
          />
        </>
      )}
      {s.step === "master" && (
        <>
          <Slider
            label="Integrated loudness"
            name={`targetLufs-${index}`}
            min={-70}
            max={-5}
            step={0.5}
            value={s.targetLufs}
            onChange={(targetLufs) => onChange({ targetLufs })}
            unit=" LUFS"
          />
          <Slider
            label="True peak ceiling"
            name={`truePeakDb-${index}`}
            min={-9}
            max={0}
            step={0.1}
            value={s.truePeakDb}
            onChange={(truePeakDb) => onChange({ truePeakDb })}
            unit=" dBTP"
          />
        </>
      )}
    </>
  );
}

/**
 * The chain as it runs: each step's status and a link to the job it runs as. The job page's
 * event stream pushes the pipeline's own status and progress; the steps' come with its record,
 * read again while it runs.
 */
function PipelineSteps({ job }: { job: Pipeline }) {
  const [record, setRecord] = useState(job);
  useEffect(() => setRecord(job), [job]);
  useEffect(() => {
    if (job.status !== "running") return;
    let stopped = false;
    const timer = setInterval(() => {
      void unwrap(kits.GET("/api/kits/v1/pipelines/{id}", { params: { path: { id: job.id } } })).then(
        (next) => !stopped && setRecord(next),
        () => undefined,
      );
    }, 1500);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [job.id, job.status]);
  return (
    <ol class="pipeline-steps" aria-label="Steps">
      {record.steps.map((s) => (
        <li key={s.index}>
          <strong>{s.step}</strong>{" "}
          {s.status === "pending" ? (
            <span class="status">pending</span>
          ) : (
            <StatusBadge job={{ status: s.status, progress: s.progress }} />
          )}
          {s.jobId !== null && isJobKind(s.jobKind) && (
            <>
              {" "}
              <a href={`#/jobs/${s.jobKind}/${s.jobId}`}>
                {KINDS[s.jobKind].label} #{s.jobId}
              </a>
            </>
          )}
          {s.errorMessage && <p class="error">{s.errorMessage}</p>}
        </li>
      ))}
    </ol>
  );
}

/** The main output of a step's job: what the next step took, or the chain's result for the last. */
function mainOutput(step: AnyJob): Track | null {
  switch (step.kind) {
    case "vocal-separations": {
      const url = step.job.vocalAudioFileUrl;
      return url ? { name: "vocal", url, lossless: url, lossy: step.job.lossyVocalAudioFileUrl } : null;
    }
    case "voice-conversions": {
      const url = step.job.recombinedAudioFileUrl ?? step.job.outputFileUrl;
      return url ? { name: step.job.recombinedAudioFileUrl ? "recombined mix" : "converted vocal", url, lossless: url } : null;
    }
    case "vocal-repairs":
    case "masterings": {
      const url = step.job.outputFileUrl;
      return url
        ? {
            name: step.kind === "masterings" ? "master" : "repaired vocal",
            url,
            lossless: url,
            lossy: step.job.lossyOutputFileUrl,
          }
        : null;
    }
    default:
      return null;
  }
}

/** A finished pipeline: before and after (its input and its last step's output), then each step's own outputs. */
function PipelineOutputs({ job }: { job: Pipeline }) {
  // each step with the job it ran as (a recombine names its convert's job: the conversion made both)
  const [steps, setSteps] = useState<Array<{ step: string; run: AnyJob }>>([]);
  // the page may show the success pushed by the event stream before the record with every step's job
  const jobIds = job.steps.map((s) => s.jobId).join();
  useEffect(() => {
    const runs = job.steps.filter((s) => s.jobId !== null && isJobKind(s.jobKind));
    void Promise.all(runs.map(async (s) => ({ step: s.step, run: await fetchJob(s.jobKind as JobKind, s.jobId!) }))).then(
      setSteps,
      () => setSteps([]),
    );
  }, [job.id, jobIds]);
  const last = steps.at(-1);
  const result = last ? mainOutput(last.run) : null;
  const tracks: Track[] = [];
  if (job.inputFileUrl) tracks.push({ name: "before", url: job.inputFileUrl });
  if (result) tracks.push({ ...result, name: `after (${result.name})` });
  return (
    <>
      <p class="hint">
        {job.inputFileName ? `${job.inputFileName}: ` : ""}
        {job.preset ? `preset ${job.preset}, ` : ""}
        {job.steps.map((s) => s.step).join(" → ")}.
      </p>
      <Mixer tracks={tracks} ab={tracks.length === 2} />
      {steps.map(({ step, run }, index) => {
        const { Outputs, label } = KINDS[run.kind] as KindView<JobKind>;
        return (
          <details key={index}>
            <summary>
              Step {index + 1}: {step} ({label} #{run.job.id})
            </summary>
            <Outputs job={run.job} />
          </details>
        );
      })}
    </>
  );
}
