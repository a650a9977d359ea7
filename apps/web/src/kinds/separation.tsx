import { useEffect, useState } from "preact/hooks";
import { formData, type SeparationJob, type SeparationModel } from "@mixdown/kits-client";
import { kits, unwrap } from "../api.ts";
import { AUDIO_ACCEPT, Failure, useSubmit, WebhookField } from "../components/form-parts.tsx";
import { FileDrop } from "../components/FileDrop.tsx";
import { Mixer, type Track } from "../components/Mixer.tsx";
import { navigate } from "../main.tsx";
import type { KindView } from "./index.ts";

type SeparationKind = "vocal-separations" | "stem-splits";
const LABELS: Record<SeparationKind, string> = { "vocal-separations": "Vocal separation", "stem-splits": "Stem split" };

/** Vocal separations: a mixture in, the vocals and the backing out. */
export const vocalSeparation: KindView<"vocal-separations"> = {
  label: LABELS["vocal-separations"],
  Form: () => <SeparationForm kind="vocal-separations" key="vocal-separations" />,
  Outputs: ({ job }) => <SeparationOutputs job={job} split={false} />,
};

/** Stem splits: a mixture in, each of the model's stems out. */
export const stemSplit: KindView<"stem-splits"> = {
  label: LABELS["stem-splits"],
  Form: () => <SeparationForm kind="stem-splits" key="stem-splits" />,
  Outputs: ({ job }) => <SeparationOutputs job={job} split />,
};

function SeparationForm({ kind }: { kind: "vocal-separations" | "stem-splits" }) {
  const [file, setFile] = useState<File | null>(null);
  const [models, setModels] = useState<SeparationModel[]>([]);
  const [model, setModel] = useState("");
  const [webhookUrl, setWebhookUrl] = useState("");
  const { error, busy, run } = useSubmit();
  useEffect(() => {
    void unwrap(kits.GET("/api/kits/v1/separation-models")).then((r) => setModels(r.data));
  }, []);
  const serving = models.filter((m) => (kind === "stem-splits" ? m.serves.stemSplit : m.serves.vocalSeparation));
  const path = `/api/kits/v1/${kind}` as const;
  const submit = run(async () => {
    if (!file) throw new Error("Choose an audio file first.");
    const body = { inputFile: file, model: model || undefined, webhookUrl: webhookUrl || undefined };
    const job = await unwrap(kits.POST(path, { body, bodySerializer: formData }));
    navigate(`#/jobs/${kind}/${job.id}`);
  });
  return (
    <form onSubmit={submit} aria-label={LABELS[kind]}>
      <FileDrop label="Mixture" name="inputFile" accept={AUDIO_ACCEPT} docPath={path} required file={file} onFile={setFile} />
      <label>
        Model
        <select name="model" value={model} onChange={(e) => setModel(e.currentTarget.value)}>
          <option value="">Server default</option>
          {serving.map((m) => (
            <option key={m.name} value={m.name}>
              {m.name} ({m.family}: {m.stems.join(", ")})
              {(kind === "stem-splits" ? m.default.stemSplit : m.default.vocalSeparation) ? " (default)" : ""}
            </option>
          ))}
        </select>
      </label>
      <WebhookField value={webhookUrl} onChange={setWebhookUrl} />
      <Failure error={error} />
      <button type="submit" disabled={busy}>
        {busy ? "Uploading…" : `Start ${LABELS[kind].toLowerCase()}`}
      </button>
    </form>
  );
}

function SeparationOutputs({ job, split }: { job: SeparationJob; split: boolean }) {
  const lossy = new Map(job.lossyStemFileUrls.map((s) => [s.instrument, s.url]));
  const tracks: Track[] = split
    ? job.stemFileUrls.map((s) => ({ name: s.instrument, url: s.url, lossless: s.url, lossy: lossy.get(s.instrument) }))
    : [
        { name: "vocals", url: job.vocalAudioFileUrl!, lossless: job.vocalAudioFileUrl, lossy: job.lossyVocalAudioFileUrl },
        { name: "backing", url: job.backingAudioFileUrl!, lossless: job.backingAudioFileUrl, lossy: lossy.get("backing") },
      ].filter((t) => t.url);
  return (
    <>
      <p class="hint">Model: {job.model}. Solo and mute the stems while they play together to audition a remix.</p>
      <Mixer tracks={tracks} />
    </>
  );
}
