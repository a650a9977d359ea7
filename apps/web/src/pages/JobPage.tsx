import { useEffect, useState } from "preact/hooks";
import type { JSX } from "preact";
import type { SeparationJob, TtsJob, VoiceBlendJob, VoiceConversionJob, VoiceModel } from "@mixdown/kits-client";
import {
  cancelJob,
  conversionInputs,
  fetchJob,
  KIND_LABELS,
  kits,
  unwrap,
  type AnyJob,
  type JobKind,
  type JobOf,
} from "../api.ts";
import { Mixer, type Track } from "../components/Mixer.tsx";
import { Cover, DemoButton } from "../components/VoicePicker.tsx";

export function StatusBadge({ job }: { job: AnyJob["job"] }) {
  return (
    <span class={`status ${job.status}`}>
      {job.status === "running" ? (
        <>
          running{" "}
          <progress max={100} value={job.progress} aria-label="Progress">
            {job.progress}%
          </progress>{" "}
          <span class="percent">{job.progress}%</span>
        </>
      ) : (
        job.status
      )}
    </span>
  );
}

/** One job: its status while it runs, then a player per output. */
export function JobPage({ kind, id }: { kind: JobKind; id: number }) {
  const [current, setCurrent] = useState<AnyJob | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const next = await fetchJob(kind, id);
        if (stopped) return;
        setCurrent(next);
        setError(null);
        if (next.job.status === "running") timer = setTimeout(poll, 1000);
      } catch (err) {
        if (!stopped) setError((err as Error).message);
      }
    };
    void poll();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [kind, id]);

  const cancel = async () => {
    try {
      setCurrent(await cancelJob(kind, id));
    } catch (err) {
      setError((err as Error).message);
    }
  };

  const job = current?.job;
  return (
    <section>
      <p>
        <a href="#/jobs">← Jobs</a>
      </p>
      <h1>
        {KIND_LABELS[kind]} #{id}
      </h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {job && (
        <div class="job-status" role="status" aria-live="polite">
          <StatusBadge job={job} />
          {job.status === "running" && (
            <button type="button" class="small" onClick={() => void cancel()}>
              Cancel
            </button>
          )}
          {job.errorMessage && <p class="error">{job.errorMessage}</p>}
        </div>
      )}
      {current && current.job.status === "success" && <Outputs current={current} />}
    </section>
  );
}

function Outputs({ current }: { current: AnyJob }) {
  return (OUTPUTS[current.kind] as (job: AnyJob["job"]) => JSX.Element)(current.job);
}

/** What a finished job of each kind shows: a kind without a view does not compile. */
const OUTPUTS: { [K in JobKind]: (job: JobOf<K>) => JSX.Element } = {
  "vocal-separations": (job) => <SeparationOutputs job={job} split={false} />,
  "stem-splits": (job) => <SeparationOutputs job={job} split />,
  "voice-conversions": (job) => <ConversionOutputs job={job} />,
  tts: (job) => <TtsOutputs job={job} />,
  "voice-blender": (job) => <BlendResult job={job} />,
};

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

function ConversionOutputs({ job }: { job: VoiceConversionJob }) {
  const input = conversionInputs.get(job.id);
  const tracks: Track[] = [];
  if (input) tracks.push({ name: "input", url: input.url });
  if (job.outputFileUrl)
    tracks.push({ name: "converted voice", url: job.outputFileUrl, lossless: job.outputFileUrl, lossy: job.lossyOutputFileUrl });
  if (job.recombinedAudioFileUrl)
    tracks.push({ name: "recombined mix", url: job.recombinedAudioFileUrl, lossless: job.recombinedAudioFileUrl });
  return (
    <>
      <p class="hint">
        Voice: {job.model.title}.{" "}
        {input
          ? "A/B switches between the input and the converted voice."
          : "The input is only kept in the tab that uploaded it, for A/B."}
      </p>
      <Mixer tracks={tracks} ab={Boolean(input)} />
    </>
  );
}

function TtsOutputs({ job }: { job: TtsJob }) {
  const tracks: Track[] = job.outputFileUrl
    ? [{ name: "spoken voice", url: job.outputFileUrl, lossless: job.outputFileUrl, lossy: job.lossyOutputFileUrl }]
    : [];
  return (
    <>
      <p class="hint">
        Voice: {job.model.title}, spoken by {job.synthesizer ?? "the base synthesizer"}
        {job.language ? ` in ${job.language}` : ""} then converted.
      </p>
      <blockquote class="tts-text">{job.inputTtsText}</blockquote>
      <Mixer tracks={tracks} />
    </>
  );
}

function BlendResult({ job }: { job: VoiceBlendJob }) {
  const [model, setModel] = useState<VoiceModel | null>(null);
  useEffect(() => {
    void unwrap(kits.GET("/api/kits/v1/voice-models/{id}", { params: { path: { id: job.outputModelId } } })).then(setModel);
  }, [job.outputModelId]);
  const shares = [job.alpha, job.alpha2, job.alpha3, job.alpha4].filter((x) => x !== undefined);
  const ids = [job.model1Id, job.model2Id, job.model3Id, job.model4Id].filter((x) => x !== undefined);
  return (
    <div class="blend-result">
      <p>{ids.map((m, i) => `model #${m}: ${shares[i]}`).join(", ")}</p>
      {model && (
        <div class="voice-card static">
          <Cover model={model} />
          <span class="voice-title">
            {model.title}{" "}
            <small>
              #{model.id}, {model.state}
            </small>
          </span>
          <DemoButton model={model} />
          <a class="button small" href="#/new/voice-conversions">
            Convert with it
          </a>
        </div>
      )}
    </div>
  );
}
