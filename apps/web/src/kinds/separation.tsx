import { useEffect, useState } from "preact/hooks";
import { formData, type operations, type SeparationJob, type SeparationModel } from "@mixdown/kits-client";
import { BATCH_KINDS, createBatch, kits, unwrap } from "../api.ts";
import { AUDIO_ACCEPT, Failure, useSubmit, WebhookField } from "../components/form-parts.tsx";
import { FileDrop } from "../components/FileDrop.tsx";
import { Mixer, type Track } from "../components/Mixer.tsx";
import { navigate } from "../main.tsx";
import type { KindView } from "./index.ts";

type SeparationKind = "vocal-separations" | "stem-splits";

/** The ensemble algorithms a create takes, as the API's document types them. */
type EnsembleAlgorithm = NonNullable<
  operations["createVocalSeparation"]["requestBody"]["content"]["multipart/form-data"]["ensemble"]
>;
/**
 * Each algorithm with what it does (the API's field description, shorter). Keyed by the document's
 * list: an algorithm the API gains does not compile here until it has its words. The first is the API's default.
 */
const ENSEMBLE_ALGORITHMS: Record<EnsembleAlgorithm, string> = {
  avg_wave: "average of the waveforms (default)",
  median_wave: "median of the waveforms",
  min_mag: "per frequency bin, the quietest member",
  max_mag: "per frequency bin, the loudest member",
  avg_mag: "per frequency bin, the complex mean",
  uvr_max_spec: "UVR's Max Spec",
  uvr_min_spec: "UVR's Min Spec",
};
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
  /** Several files: one batch of this kind, a job each. */
  const [files, setFiles] = useState<File[]>([]);
  const [models, setModels] = useState<SeparationModel[]>([]);
  /** The models chosen, in the order they were ticked: none = the server's default, two or more = an ensemble. */
  const [chosen, setChosen] = useState<string[]>([]);
  const [ensemble, setEnsemble] = useState<EnsembleAlgorithm>("avg_wave");
  const [webhookUrl, setWebhookUrl] = useState("");
  const { error, busy, run } = useSubmit();
  useEffect(() => {
    void unwrap(kits.GET("/api/kits/v1/separation-models")).then((r) => setModels(r.data));
  }, []);
  const serving = models.filter((m) => (kind === "stem-splits" ? m.serves.stemSplit : m.serves.vocalSeparation));
  const path = `/api/kits/v1/${kind}` as const;
  const submit = run(async () => {
    if (!file) throw new Error("Choose an audio file first.");
    const options = {
      model: chosen.length > 0 ? chosen.join(",") : undefined,
      ensemble: chosen.length > 1 ? ensemble : undefined,
      webhookUrl: webhookUrl || undefined,
    };
    if (files.length > 1) {
      const batch = await createBatch(BATCH_KINDS[kind], files, options);
      navigate(`#/batches/${batch.id}`);
      return;
    }
    const job = await unwrap(kits.POST(path, { body: { inputFile: file, ...options }, bodySerializer: formData }));
    navigate(`#/jobs/${kind}/${job.id}`);
  });
  return (
    <form onSubmit={submit} aria-label={LABELS[kind]}>
      <FileDrop
        label="Mixture"
        name="inputFile"
        accept={AUDIO_ACCEPT}
        docPath={path}
        required
        file={file}
        onFile={setFile}
        multiple
        files={files}
        onFiles={setFiles}
      />
      <fieldset class="models">
        <legend>Models</legend>
        <p class="hint">
          None ticked: the server's default. Two or more: an ensemble, each model run on the mixture and their stems combined
          {kind === "stem-splits" ? " (the stems they have in common)" : ""}.
        </p>
        {serving.map((m) => (
          <label key={m.name}>
            <input
              type="checkbox"
              name="model"
              value={m.name}
              checked={chosen.includes(m.name)}
              onChange={(e) =>
                setChosen((now) => (e.currentTarget.checked ? [...now, m.name] : now.filter((name) => name !== m.name)))
              }
            />{" "}
            {m.name}{" "}
            <small>
              ({m.family}: {m.stems.join(", ")})
              {(kind === "stem-splits" ? m.default.stemSplit : m.default.vocalSeparation) ? " (default)" : ""}
            </small>
          </label>
        ))}
      </fieldset>
      {chosen.length > 1 && (
        <label>
          Ensemble algorithm ({chosen.join(" + ")})
          <select name="ensemble" value={ensemble} onChange={(e) => setEnsemble(e.currentTarget.value as EnsembleAlgorithm)}>
            {(Object.keys(ENSEMBLE_ALGORITHMS) as EnsembleAlgorithm[]).map((name) => (
              <option key={name} value={name}>
                {name}: {ENSEMBLE_ALGORITHMS[name]}
              </option>
            ))}
          </select>
        </label>
      )}
      <WebhookField value={webhookUrl} onChange={setWebhookUrl} />
      <Failure error={error} />
      <button type="submit" disabled={busy}>
        {busy ? "Uploading…" : files.length > 1 ? `Start a batch of ${files.length}` : `Start ${LABELS[kind].toLowerCase()}`}
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
      <p class="hint">
        Model: {job.model}
        {job.ensemble ? ` (ensemble, ${job.ensemble})` : ""}. Solo and mute the stems while they play together to audition a
        remix.
      </p>
      <Mixer tracks={tracks} />
    </>
  );
}
