import { useState } from "preact/hooks";
import {
  CONVERSION_CONTROLS,
  formData,
  POST_EFFECTS,
  PRE_EFFECTS,
  type ConversionControlName,
  type VoiceConversionJob,
} from "@mixdown/kits-client";
import { conversionInputs, kits, unwrap } from "../api.ts";
import { type Chain, EffectChain } from "../components/EffectChain.tsx";
import { FileDrop } from "../components/FileDrop.tsx";
import { AUDIO_ACCEPT, Failure, Slider, useSubmit, useVoiceModels, WebhookField } from "../components/form-parts.tsx";
import { Mixer, type Track } from "../components/Mixer.tsx";
import { VoicePicker } from "../components/VoicePicker.tsx";
import { navigate } from "../main.tsx";
import type { KindView } from "./index.ts";

/** Voice conversions: a recording in, the same performance in a voice model's voice out. */
export const voiceConversion: KindView<"voice-conversions"> = {
  label: "Voice conversion",
  Form: () => <ConversionForm />,
  Outputs: ({ job }) => <ConversionOutputs job={job} />,
};

/** A slider for one of a conversion's numeric controls, with the range the API accepts. */
function ControlSlider(props: Omit<Parameters<typeof Slider>[0], "min" | "max"> & { name: ConversionControlName }) {
  const { min, max } = CONVERSION_CONTROLS[props.name];
  return <Slider {...props} min={min} max={max} />;
}

function ConversionForm() {
  const models = useVoiceModels();
  const [voice, setVoice] = useState<number | null>(null);
  const [sound, setSound] = useState<File | null>(null);
  const [backing, setBacking] = useState<File | null>(null);
  const [strength, setStrength] = useState<number>(CONVERSION_CONTROLS.conversionStrength.default);
  const [mix, setMix] = useState<number>(CONVERSION_CONTROLS.modelVolumeMix.default);
  const [pitch, setPitch] = useState<number>(CONVERSION_CONTROLS.pitchShift.default);
  const [pre, setPre] = useState<Chain>({});
  const [post, setPost] = useState<Chain>({});
  const [webhookUrl, setWebhookUrl] = useState("");
  const { error, busy, run } = useSubmit();
  const path = "/api/kits/v1/voice-conversions";
  const submit = run(async () => {
    if (voice === null) throw new Error("Pick a voice model.");
    if (!sound) throw new Error("Choose the recording to convert.");
    const job = await unwrap(
      kits.POST(path, {
        body: {
          voiceModelId: voice,
          soundFile: sound,
          conversionStrength: strength,
          modelVolumeMix: mix,
          pitchShift: pitch,
          pre: Object.keys(pre).length ? JSON.stringify(pre) : undefined,
          post: Object.keys(post).length ? JSON.stringify(post) : undefined,
          backingSoundFile: backing ?? undefined,
          webhookUrl: webhookUrl || undefined,
        },
        bodySerializer: formData,
      }),
    );
    conversionInputs.set(job.id, { url: URL.createObjectURL(sound), name: sound.name });
    navigate(`#/jobs/voice-conversions/${job.id}`);
  });
  return (
    <form onSubmit={submit} aria-label="Voice conversion">
      <VoicePicker name="voiceModelId" legend="Voice model" models={models} value={voice} onChange={setVoice} />
      <FileDrop
        label="Recording to convert"
        name="soundFile"
        accept={AUDIO_ACCEPT}
        docPath={path}
        required
        file={sound}
        onFile={setSound}
      />
      <ControlSlider label="Conversion strength" name="conversionStrength" step={0.01} value={strength} onChange={setStrength} />
      <ControlSlider label="Model volume mix" name="modelVolumeMix" step={0.01} value={mix} onChange={setMix} />
      <ControlSlider label="Pitch shift" name="pitchShift" step={1} value={pitch} onChange={setPitch} unit=" st" />
      <EffectChain legend="Effects before conversion (pre)" id="pre" effects={PRE_EFFECTS} value={pre} onChange={setPre} />
      <EffectChain legend="Effects after conversion (post)" id="post" effects={POST_EFFECTS} value={post} onChange={setPost} />
      <FileDrop
        label="Backing track"
        name="backingSoundFile"
        accept={AUDIO_ACCEPT}
        docPath={path}
        file={backing}
        onFile={setBacking}
      />
      <WebhookField value={webhookUrl} onChange={setWebhookUrl} />
      <Failure error={error} />
      <button type="submit" disabled={busy}>
        {busy ? "Uploading…" : "Start voice conversion"}
      </button>
    </form>
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
