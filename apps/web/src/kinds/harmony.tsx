import { useState } from "preact/hooks";
import { formData, type HarmonyJob } from "@mixdown/kits-client";
import { kits, unwrap } from "../api.ts";
import { AUDIO_ACCEPT, Failure, useSubmit, WebhookField } from "../components/form-parts.tsx";
import { FileDrop } from "../components/FileDrop.tsx";
import { Mixer, type Track } from "../components/Mixer.tsx";
import { navigate } from "../main.tsx";
import type { KindView } from "./index.ts";

type Interval = "third" | "sixth";
type Direction = "above" | "below";

/** Harmonies: a lead vocal (or a mix) and a key in; a harmony voice a third or a sixth away out, alone and mixed. */
export const harmony: KindView<"harmonies"> = {
  label: "Harmony",
  Form: () => <HarmonyForm />,
  Outputs: ({ job }) => <HarmonyOutputs job={job} />,
};

function HarmonyForm() {
  const [file, setFile] = useState<File | null>(null);
  const [key, setKey] = useState("");
  const [interval, setInterval] = useState<Interval>("third");
  const [direction, setDirection] = useState<Direction>("above");
  const [isolateVocal, setIsolateVocal] = useState(false);
  const [webhookUrl, setWebhookUrl] = useState("");
  const { error, busy, run } = useSubmit();
  const path = "/api/kits/v1/harmonies" as const;
  const submit = run(async () => {
    if (!file) throw new Error("Choose an audio file first.");
    const job = await unwrap(
      kits.POST(path, {
        body: {
          inputFile: file,
          key: key.trim() || undefined,
          interval,
          direction,
          isolateVocal,
          webhookUrl: webhookUrl || undefined,
        },
        bodySerializer: formData,
      }),
    );
    navigate(`#/jobs/harmonies/${job.id}`);
  });
  return (
    <form onSubmit={submit} aria-label="Harmony">
      <FileDrop label="Lead vocal" name="inputFile" accept={AUDIO_ACCEPT} docPath={path} required file={file} onFile={setFile} />
      <label>
        Key{" "}
        <input
          name="key"
          value={key}
          placeholder="A minor, F# major… (empty: found)"
          onInput={(e) => setKey(e.currentTarget.value)}
        />
      </label>
      <label>
        Interval{" "}
        <select name="interval" value={interval} onChange={(e) => setInterval(e.currentTarget.value as Interval)}>
          <option value="third">a third</option>
          <option value="sixth">a sixth</option>
        </select>
      </label>
      <label>
        Direction{" "}
        <select name="direction" value={direction} onChange={(e) => setDirection(e.currentTarget.value as Direction)}>
          <option value="above">above the lead</option>
          <option value="below">below the lead</option>
        </select>
      </label>
      <label>
        <input type="checkbox" name="isolateVocal" checked={isolateVocal} onChange={() => setIsolateVocal(!isolateVocal)} /> The
        file is a mix: isolate its vocal first
      </label>
      <WebhookField value={webhookUrl} onChange={setWebhookUrl} />
      <Failure error={error} />
      <button type="submit" disabled={busy}>
        {busy ? "Uploading…" : "Harmonise it"}
      </button>
    </form>
  );
}

function HarmonyOutputs({ job }: { job: HarmonyJob }) {
  // before and after, played together: the Mixer's A/B switches between them at the same point
  const tracks: Track[] = [];
  if (job.inputFileUrl) tracks.push({ name: "before (lead)", url: job.inputFileUrl });
  if (job.mixFileUrl)
    tracks.push({ name: "after (with harmony)", url: job.mixFileUrl, lossless: job.mixFileUrl, lossy: job.lossyMixFileUrl });
  if (job.harmonyFileUrl)
    tracks.push({ name: "harmony alone", url: job.harmonyFileUrl, lossless: job.harmonyFileUrl, lossy: job.lossyHarmonyFileUrl });
  return (
    <>
      <p class="hint">
        {job.inputFileName ? `${job.inputFileName}: ` : ""}a {job.interval} {job.direction}
        {job.key
          ? ` in ${job.key} (${job.keySource === "given" ? "given" : `found, strength ${job.keyConfidence?.toFixed(2) ?? "–"}`})`
          : ", key to be found"}
        {job.isolateVocal ? ", the vocal isolated from the mix first" : ""}
        {job.notes !== null ? `; ${job.notes} notes` : ""}
        {job.models.length > 0 ? ` (models: ${job.models.join(", ")})` : ""}.
      </p>
      <Mixer tracks={tracks} />
    </>
  );
}
