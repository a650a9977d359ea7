import { useEffect, useState } from "preact/hooks";
import type { TtsJob } from "@mixdown/kits-client";
import { fieldHelp, kits, unwrap } from "../api.ts";
import { Failure, useSubmit, useVoiceModels, WebhookField } from "../components/form-parts.tsx";
import { Mixer, type Track } from "../components/Mixer.tsx";
import { VoicePicker } from "../components/VoicePicker.tsx";
import { navigate } from "../main.tsx";
import type { KindView } from "./index.ts";

/** Text to speech: a text in, spoken in a voice model's voice. */
export const tts: KindView<"tts"> = {
  label: "Text to speech",
  Form: () => <TtsForm />,
  Outputs: ({ job }) => <TtsOutputs job={job} />,
};

function TtsForm() {
  const models = useVoiceModels();
  const [voice, setVoice] = useState<number | null>(null);
  const [text, setText] = useState("");
  const [language, setLanguage] = useState("");
  const [help, setHelp] = useState<string | null>(null);
  const [webhookUrl, setWebhookUrl] = useState("");
  const { error, busy, run } = useSubmit();
  useEffect(() => {
    void fieldHelp("/api/kits/v1/tts", "inputTtsText").then(setHelp);
  }, []);
  const submit = run(async () => {
    if (voice === null) throw new Error("Pick a voice model.");
    const job = await unwrap(
      kits.POST("/api/kits/v1/tts", {
        body: {
          voiceModelId: voice,
          inputTtsText: text,
          ...(language.trim() ? { language: language.trim() } : {}),
          ...(webhookUrl ? { webhookUrl } : {}),
        },
      }),
    );
    navigate(`#/jobs/tts/${job.id}`);
  });
  return (
    <form onSubmit={submit} aria-label="Text to speech">
      <VoicePicker name="voiceModelId" legend="Voice model" models={models} value={voice} onChange={setVoice} />
      <label>
        Text to speak
        <textarea
          name="inputTtsText"
          rows={6}
          required
          value={text}
          onInput={(e) => setText(e.currentTarget.value)}
          aria-describedby={help ? "tts-text-help" : undefined}
        />
      </label>
      {help && (
        <p class="hint" id="tts-text-help">
          {help}. {[...text].length} characters.
        </p>
      )}
      <label>
        Language (optional)
        <input
          name="language"
          placeholder="en"
          value={language}
          onInput={(e) => setLanguage(e.currentTarget.value)}
          aria-describedby="tts-language-help"
        />
      </label>
      <p class="hint" id="tts-language-help">
        A language tag as espeak-ng names its voices: de, fr, en-gb, pt-br, … Empty: English.
      </p>
      <WebhookField value={webhookUrl} onChange={setWebhookUrl} />
      <Failure error={error} />
      <button type="submit" disabled={busy}>
        {busy ? "Starting…" : "Speak it"}
      </button>
    </form>
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
