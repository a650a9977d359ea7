import { useState } from "preact/hooks";
import { formData, type VocalRepairJob } from "@mixdown/kits-client";
import { kits, unwrap } from "../api.ts";
import { AUDIO_ACCEPT, Failure, useSubmit, WebhookField } from "../components/form-parts.tsx";
import { FileDrop } from "../components/FileDrop.tsx";
import { Mixer, type Track } from "../components/Mixer.tsx";
import { navigate } from "../main.tsx";
import type { KindView } from "./index.ts";

/** The steps the form offers, in the order they run, with what each does. */
const STEPS = [
  { step: "dereverb", label: "Remove room reverb (the vocal split)" },
  { step: "denoise", label: "Remove noise (RNNoise)" },
] as const;

/** Vocal repairs: a vocal (or a mix) in; the vocal without its noise and reverb out. */
export const vocalRepair: KindView<"vocal-repairs"> = {
  label: "Vocal repair",
  Form: () => <VocalRepairForm />,
  Outputs: ({ job }) => <VocalRepairOutputs job={job} />,
};

function VocalRepairForm() {
  const [file, setFile] = useState<File | null>(null);
  const [steps, setSteps] = useState<Set<string>>(new Set(["denoise"]));
  const [isolateVocal, setIsolateVocal] = useState(false);
  const [webhookUrl, setWebhookUrl] = useState("");
  const { error, busy, run } = useSubmit();
  const path = "/api/kits/v1/vocal-repairs" as const;
  const toggle = (step: string) => {
    const next = new Set(steps);
    if (next.has(step)) next.delete(step);
    else next.add(step);
    setSteps(next);
  };
  const submit = run(async () => {
    if (!file) throw new Error("Choose an audio file first.");
    if (steps.size === 0) throw new Error("Choose at least one repair.");
    const job = await unwrap(
      kits.POST(path, {
        body: { inputFile: file, steps: [...steps].join(","), isolateVocal, webhookUrl: webhookUrl || undefined },
        bodySerializer: formData,
      }),
    );
    navigate(`#/jobs/vocal-repairs/${job.id}`);
  });
  return (
    <form onSubmit={submit} aria-label="Vocal repair">
      <FileDrop label="Vocal" name="inputFile" accept={AUDIO_ACCEPT} docPath={path} required file={file} onFile={setFile} />
      <fieldset>
        <legend>Repairs</legend>
        {STEPS.map(({ step, label }) => (
          <label key={step}>
            <input type="checkbox" name="steps" value={step} checked={steps.has(step)} onChange={() => toggle(step)} /> {label}
          </label>
        ))}
      </fieldset>
      <label>
        <input type="checkbox" name="isolateVocal" checked={isolateVocal} onChange={() => setIsolateVocal(!isolateVocal)} /> The
        file is a mix: isolate its vocal first
      </label>
      <WebhookField value={webhookUrl} onChange={setWebhookUrl} />
      <Failure error={error} />
      <button type="submit" disabled={busy}>
        {busy ? "Uploading…" : "Repair it"}
      </button>
    </form>
  );
}

function VocalRepairOutputs({ job }: { job: VocalRepairJob }) {
  const tracks: Track[] = job.outputFileUrl
    ? [{ name: "repaired vocal", url: job.outputFileUrl, lossless: job.outputFileUrl, lossy: job.lossyOutputFileUrl }]
    : [];
  return (
    <>
      <p class="hint">
        {job.inputFileName ? `${job.inputFileName}: ` : ""}
        {job.isolateVocal ? "vocal isolated, then " : ""}
        {job.steps.join(", then ")}
        {job.models.length > 0 ? ` (models: ${job.models.join(", ")})` : ""}.
      </p>
      <Mixer tracks={tracks} />
    </>
  );
}
