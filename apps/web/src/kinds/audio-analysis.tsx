import { useState } from "preact/hooks";
import { formData, type AudioAnalysisJob } from "@mixdown/kits-client";
import { kits, unwrap } from "../api.ts";
import { AUDIO_ACCEPT, Failure, useSubmit, WebhookField } from "../components/form-parts.tsx";
import { FileDrop } from "../components/FileDrop.tsx";
import { navigate } from "../main.tsx";
import type { KindView } from "./index.ts";

/** Audio analyses: a file in; its key, tempo and beats, loudness and duration out. */
export const audioAnalysis: KindView<"audio-analyses"> = {
  label: "Key, tempo and loudness",
  Form: () => <AudioAnalysisForm />,
  Outputs: ({ job }) => <AudioAnalysisOutputs job={job} />,
};

function AudioAnalysisForm() {
  const [file, setFile] = useState<File | null>(null);
  const [webhookUrl, setWebhookUrl] = useState("");
  const { error, busy, run } = useSubmit();
  const path = "/api/kits/v1/audio-analyses" as const;
  const submit = run(async () => {
    if (!file) throw new Error("Choose an audio file first.");
    const job = await unwrap(
      kits.POST(path, { body: { inputFile: file, webhookUrl: webhookUrl || undefined }, bodySerializer: formData }),
    );
    navigate(`#/jobs/audio-analyses/${job.id}`);
  });
  return (
    <form onSubmit={submit} aria-label="Key, tempo and loudness">
      <FileDrop label="Audio" name="inputFile" accept={AUDIO_ACCEPT} docPath={path} required file={file} onFile={setFile} />
      <WebhookField value={webhookUrl} onChange={setWebhookUrl} />
      <Failure error={error} />
      <button type="submit" disabled={busy}>
        {busy ? "Uploading…" : "Analyse it"}
      </button>
    </form>
  );
}

const fixed = (value: number | null, digits: number, unit: string) => (value === null ? "–" : `${value.toFixed(digits)} ${unit}`);

function AudioAnalysisOutputs({ job }: { job: AudioAnalysisJob }) {
  const analysis = job.analysis;
  if (!analysis) return <p class="hint">No analysis yet.</p>;
  const { key, tempo, loudness } = analysis;
  return (
    <>
      <dl class="analysis" aria-label="Analysis">
        <dt>Key</dt>
        <dd>{key ? `${key.key} ${key.scale} (confidence ${key.confidence.toFixed(2)})` : "none found (silence)"}</dd>
        <dt>Tempo</dt>
        <dd>
          {tempo
            ? `${tempo.bpm.toFixed(1)} BPM (confidence ${tempo.confidence.toFixed(2)} of 5.32), ${tempo.beats.length} beats`
            : "none found"}
        </dd>
        <dt>Integrated loudness</dt>
        <dd>{fixed(loudness.integratedLufs, 1, "LUFS")}</dd>
        <dt>Loudness range</dt>
        <dd>{fixed(loudness.loudnessRangeLu, 1, "LU")}</dd>
        <dt>True peak</dt>
        <dd>{fixed(loudness.truePeakDbtp, 1, "dBTP")}</dd>
        <dt>Duration</dt>
        <dd>{fixed(analysis.durationSeconds, 2, "s")}</dd>
      </dl>
      {tempo && tempo.beats.length > 0 && (
        <p class="hint">
          First beats (s):{" "}
          {tempo.beats
            .slice(0, 8)
            .map((b) => b.toFixed(2))
            .join(", ")}
          {tempo.beats.length > 8 ? ", …" : ""}
        </p>
      )}
      <p class="hint">
        {job.inputFileName ? `${job.inputFileName}: ` : ""}analysed by {job.analyzer}.
      </p>
    </>
  );
}
