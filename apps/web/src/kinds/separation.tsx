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
type CreateForm = operations["createVocalSeparation"]["requestBody"]["content"]["multipart/form-data"];
type OutputFormat = NonNullable<CreateForm["outputFormat"]>;
type SampleFormat = NonNullable<CreateForm["sampleFormat"]>;
/** The sample formats with their words, keyed by the document's list; f32 is WAV only. */
const SAMPLE_FORMATS: Record<SampleFormat, string> = { s16: "16-bit", s24: "24-bit", f32: "32-bit float (WAV only)" };
/** The rates the API takes for `sampleRate` (its field's description lists them; any other is a 422). */
const SAMPLE_RATES = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000, 176400, 192000];
/** Output control as the form holds it: "" is the server's default. */
interface OutputChoice {
  outputFormat: OutputFormat | "";
  sampleFormat: SampleFormat | "";
  compressionLevel: string;
  sampleRate: string;
  stems: string;
}
const NO_OUTPUT_CHOICE: OutputChoice = { outputFormat: "", sampleFormat: "", compressionLevel: "", sampleRate: "", stems: "" };

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
  /** Links to audio files, one per line: each a job of the batch, downloaded by the server. */
  const [links, setLinks] = useState("");
  const linkList = links
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
  const batchSize = (files.length > 1 ? files.length : file ? 1 : 0) + linkList.length;
  const [models, setModels] = useState<SeparationModel[]>([]);
  /** The models chosen, in the order they were ticked: none = the server's default, two or more = an ensemble. */
  const [chosen, setChosen] = useState<string[]>([]);
  const [ensemble, setEnsemble] = useState<EnsembleAlgorithm>("avg_wave");
  const [webhookUrl, setWebhookUrl] = useState("");
  const [output, setOutput] = useState<OutputChoice>(NO_OUTPUT_CHOICE);
  const { error, busy, run } = useSubmit();
  useEffect(() => {
    void unwrap(kits.GET("/api/kits/v1/separation-models")).then((r) => setModels(r.data));
  }, []);
  const serving = models.filter((m) => (kind === "stem-splits" ? m.serves.stemSplit : m.serves.vocalSeparation));
  const path = `/api/kits/v1/${kind}` as const;
  const submit = run(async () => {
    if (!file && linkList.length === 0) throw new Error("Choose an audio file, or give links, first.");
    const options = {
      model: chosen.length > 0 ? chosen.join(",") : undefined,
      ensemble: chosen.length > 1 ? ensemble : undefined,
      webhookUrl: webhookUrl || undefined,
      outputFormat: output.outputFormat || undefined,
      sampleFormat: output.sampleFormat || undefined,
      compressionLevel: output.outputFormat === "flac" && output.compressionLevel ? Number(output.compressionLevel) : undefined,
      sampleRate: output.sampleRate ? Number(output.sampleRate) : undefined,
      stems: output.stems.trim() || undefined,
    };
    if (files.length > 1 || linkList.length > 0) {
      const batch = await createBatch(BATCH_KINDS[kind], files.length > 1 ? files : file ? [file] : [], options, linkList);
      navigate(`#/batches/${batch.id}`);
      return;
    }
    const job = await unwrap(kits.POST(path, { body: { inputFile: file!, ...options }, bodySerializer: formData }));
    navigate(`#/jobs/${kind}/${job.id}`);
  });
  return (
    <form onSubmit={submit} aria-label={LABELS[kind]}>
      <FileDrop
        label="Mixture"
        name="inputFile"
        accept={AUDIO_ACCEPT}
        docPath={path}
        required={linkList.length === 0}
        file={file}
        onFile={setFile}
        multiple
        files={files}
        onFiles={setFiles}
      />
      <details class="batch-links" open={linkList.length > 0}>
        <summary>Links to audio files</summary>
        <label>
          Links, one per line
          <textarea
            name="urls"
            rows={4}
            placeholder="https://example.com/song.mp3"
            value={links}
            onInput={(e) => setLinks(e.currentTarget.value)}
          />
        </label>
        <p class="hint">
          Each link is one job of a batch (with any files chosen above): the server downloads it (http or https, an audio file it
          would take as an upload) before the job runs. A link it cannot download, or that is not audio, fails its own job.
        </p>
      </details>
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
      <OutputFields
        value={output}
        onChange={setOutput}
        stems={
          kind === "vocal-separations"
            ? ["vocals", "harmony", "reverb", "backing"]
            : (serving.find((m) => (chosen.length > 0 ? m.name === chosen[0] : m.default.stemSplit))?.stems ?? [])
        }
      />
      <WebhookField value={webhookUrl} onChange={setWebhookUrl} />
      <Failure error={error} />
      <button type="submit" disabled={busy}>
        {busy
          ? "Uploading…"
          : files.length > 1 || linkList.length > 0
            ? `Start a batch of ${batchSize}`
            : `Start ${LABELS[kind].toLowerCase()}`}
      </button>
    </form>
  );
}

/** Output control: the lossless files' format, samples, rate and the stems kept; all optional. */
function OutputFields({
  value,
  onChange,
  stems,
}: {
  value: OutputChoice;
  onChange: (value: OutputChoice) => void;
  stems: string[];
}) {
  const set = (field: keyof OutputChoice) => (e: { currentTarget: { value: string } }) =>
    onChange({ ...value, [field]: e.currentTarget.value });
  return (
    <details class="output-control">
      <summary>Output files</summary>
      <p class="hint">
        Unset: the server's defaults (its lossless format, at the input's rate, every stem). The mp3 files are unchanged.
      </p>
      <label>
        Lossless format
        <select name="outputFormat" value={value.outputFormat} onChange={set("outputFormat")}>
          <option value="">server default</option>
          <option value="wav">WAV</option>
          <option value="flac">FLAC</option>
        </select>
      </label>
      <label>
        Samples
        <select name="sampleFormat" value={value.sampleFormat} onChange={set("sampleFormat")}>
          <option value="">default for the format</option>
          {(Object.keys(SAMPLE_FORMATS) as SampleFormat[]).map((f) => (
            <option key={f} value={f} disabled={f === "f32" && value.outputFormat === "flac"}>
              {SAMPLE_FORMATS[f]}
            </option>
          ))}
        </select>
      </label>
      {value.outputFormat === "flac" && (
        <label>
          FLAC compression level (0 fastest, 12 smallest; default 5)
          <input
            name="compressionLevel"
            type="number"
            min={0}
            max={12}
            step={1}
            value={value.compressionLevel}
            onInput={set("compressionLevel")}
          />
        </label>
      )}
      <label>
        Sample rate
        <select name="sampleRate" value={value.sampleRate} onChange={set("sampleRate")}>
          <option value="">the input's</option>
          {SAMPLE_RATES.map((r) => (
            <option key={r} value={String(r)}>
              {r} Hz
            </option>
          ))}
        </select>
      </label>
      <label>
        Stems to keep (comma-separated; empty: all)
        <input name="stems" type="text" value={value.stems} onInput={set("stems")} placeholder={stems.join(",")} />
      </label>
    </details>
  );
}

/** What a job with output options wrote, in words. */
function writtenOutput(output: NonNullable<SeparationJob["output"]>): string {
  const level = output.compressionLevel !== null ? `, level ${output.compressionLevel}` : "";
  return `${output.format.toUpperCase()} ${SAMPLE_FORMATS[output.sampleFormat].replace(" (WAV only)", "")}${level}, ${output.sampleRate} Hz; stems ${output.stems.join(", ")}.`;
}

function SeparationOutputs({ job, split }: { job: SeparationJob; split: boolean }) {
  const lossy = new Map(job.lossyStemFileUrls.map((s) => [s.instrument, s.url]));
  // a job that kept some stems only lists those (its vocal and backing URLs may be absent)
  const tracks: Track[] =
    split || job.output
      ? job.stemFileUrls.map((s) => ({ name: s.instrument, url: s.url, lossless: s.url, lossy: lossy.get(s.instrument) }))
      : [
          { name: "vocals", url: job.vocalAudioFileUrl!, lossless: job.vocalAudioFileUrl, lossy: job.lossyVocalAudioFileUrl },
          { name: "backing", url: job.backingAudioFileUrl!, lossless: job.backingAudioFileUrl, lossy: lossy.get("backing") },
        ].filter((t) => t.url);
  return (
    <>
      <p class="hint">
        Model: {job.model}
        {job.ensemble ? ` (ensemble, ${job.ensemble})` : ""}.{job.output ? ` Lossless files: ${writtenOutput(job.output)}` : ""}{" "}
        Solo and mute the stems while they play together to audition a remix.
      </p>
      <Mixer tracks={tracks} />
    </>
  );
}
