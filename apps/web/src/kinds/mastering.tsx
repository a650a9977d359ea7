import { useState } from "preact/hooks";
import { formData, type MasteringJob } from "@mixdown/kits-client";
import { kits, unwrap } from "../api.ts";
import { AUDIO_ACCEPT, Failure, Slider, useSubmit, WebhookField } from "../components/form-parts.tsx";
import { FileDrop } from "../components/FileDrop.tsx";
import { Mixer, type Track } from "../components/Mixer.tsx";
import { navigate } from "../main.tsx";
import type { KindView } from "./index.ts";

/** Masterings: a track in, mastered to a reference track or to a loudness target. */
export const mastering: KindView<"masterings"> = {
  label: "Mastering",
  Form: () => <MasteringForm />,
  Outputs: ({ job }) => <MasteringOutputs job={job} />,
};

function MasteringForm() {
  const [target, setTarget] = useState<File | null>(null);
  const [reference, setReference] = useState<File | null>(null);
  const [mode, setMode] = useState<"reference" | "loudness">("reference");
  const [lufs, setLufs] = useState(-14);
  const [peak, setPeak] = useState(-1);
  const [webhookUrl, setWebhookUrl] = useState("");
  const { error, busy, run } = useSubmit();
  const path = "/api/kits/v1/masterings" as const;
  const submit = run(async () => {
    if (!target) throw new Error("Choose the track to master first.");
    if (mode === "reference" && !reference) throw new Error("Choose a reference track, or master to a loudness target.");
    const body =
      mode === "reference"
        ? { targetFile: target, referenceFile: reference!, webhookUrl: webhookUrl || undefined }
        : { targetFile: target, targetLufs: lufs, truePeakDb: peak, webhookUrl: webhookUrl || undefined };
    const job = await unwrap(kits.POST(path, { body, bodySerializer: formData }));
    navigate(`#/jobs/masterings/${job.id}`);
  });
  return (
    <form onSubmit={submit} aria-label="Mastering">
      <FileDrop
        label="Track to master"
        name="targetFile"
        accept={AUDIO_ACCEPT}
        docPath={path}
        required
        file={target}
        onFile={setTarget}
      />
      <fieldset>
        <legend>Master to</legend>
        <label>
          <input type="radio" name="mode" checked={mode === "reference"} onChange={() => setMode("reference")} /> a reference
          track (Matchering)
        </label>
        <label>
          <input type="radio" name="mode" checked={mode === "loudness"} onChange={() => setMode("loudness")} /> a loudness target
          (EBU R128)
        </label>
      </fieldset>
      {mode === "reference" ? (
        <FileDrop
          label="Reference track"
          name="referenceFile"
          accept={AUDIO_ACCEPT}
          docPath={path}
          required
          file={reference}
          onFile={setReference}
        />
      ) : (
        <>
          <Slider
            label="Integrated loudness"
            name="targetLufs"
            min={-70}
            max={-5}
            step={0.5}
            value={lufs}
            onChange={setLufs}
            unit=" LUFS"
          />
          <Slider
            label="True peak ceiling"
            name="truePeakDb"
            min={-9}
            max={0}
            step={0.1}
            value={peak}
            onChange={setPeak}
            unit=" dBTP"
          />
        </>
      )}
      <WebhookField value={webhookUrl} onChange={setWebhookUrl} />
      <Failure error={error} />
      <button type="submit" disabled={busy}>
        {busy ? "Uploading…" : "Master it"}
      </button>
    </form>
  );
}

const fixed = (value: number | null | undefined, unit: string) =>
  value === null || value === undefined ? "–" : `${value.toFixed(1)} ${unit}`;

function MasteringOutputs({ job }: { job: MasteringJob }) {
  // before and after, played together: the Mixer's A/B switches between them at the same point
  const tracks: Track[] = [];
  if (job.inputFileUrl) tracks.push({ name: "before", url: job.inputFileUrl });
  if (job.outputFileUrl)
    tracks.push({ name: "after (master)", url: job.outputFileUrl, lossless: job.outputFileUrl, lossy: job.lossyOutputFileUrl });
  const rows: Array<[string, "integratedLufs" | "loudnessRangeLu" | "truePeakDbtp", string]> = [
    ["Integrated loudness", "integratedLufs", "LUFS"],
    ["Loudness range", "loudnessRangeLu", "LU"],
    ["True peak", "truePeakDbtp", "dBTP"],
  ];
  return (
    <>
      <p class="hint">
        {job.mode === "reference"
          ? `Mastered to ${job.referenceFileName ?? "the reference track"} (Matchering).`
          : `Normalised to ${job.targetLufs} LUFS, ${job.truePeakDb} dBTP${job.processor ? ` (${job.processor})` : ""}.`}
      </p>
      {job.loudnessBefore && (
        <table class="loudness" aria-label="Loudness before and after">
          <thead>
            <tr>
              <th />
              <th scope="col">Before</th>
              <th scope="col">After</th>
            </tr>
          </thead>
          <tbody>
            {rows.map(([label, field, unit]) => (
              <tr key={field}>
                <th scope="row">{label}</th>
                <td>{fixed(job.loudnessBefore?.[field], unit)}</td>
                <td>{fixed(job.loudnessAfter?.[field], unit)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {job.output16BitFileUrl && (
        <p>
          <a href={job.output16BitFileUrl}>Download the 16-bit WAV</a>
        </p>
      )}
      <Mixer tracks={tracks} ab={tracks.length === 2} />
    </>
  );
}
