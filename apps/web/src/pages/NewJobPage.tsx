import { useEffect, useState } from "preact/hooks";
import type { JSX } from "preact";
import {
  CONVERSION_CONTROLS,
  formData,
  POST_EFFECTS,
  PRE_EFFECTS,
  type ConversionControlName,
  type SeparationModel,
  type VoiceModel,
} from "@mixdown/kits-client";
import { conversionInputs, fieldHelp, JOB_KINDS, KIND_LABELS, kits, listVoiceModels, unwrap, type JobKind } from "../api.ts";
import { type Chain, EffectChain } from "../components/EffectChain.tsx";
import { FileDrop } from "../components/FileDrop.tsx";
import { VoicePicker } from "../components/VoicePicker.tsx";
import { navigate } from "../main.tsx";

export type NewKind = JobKind;

const AUDIO_ACCEPT = ".wav,.mp3,.flac,.webm,audio/*";

/** The create form of each job kind, with every field the API takes. */
export function NewJobPage({ kind }: { kind: NewKind }) {
  return (
    <section>
      <h1>New job</h1>
      <nav class="tabs" aria-label="Job kind">
        {JOB_KINDS.map((k) => (
          <a key={k} href={`#/new/${k}`} aria-current={k === kind ? "page" : undefined}>
            {KIND_LABELS[k]}
          </a>
        ))}
      </nav>
      {CREATE_FORMS[kind]()}
    </section>
  );
}

/** Each kind's create form: a kind without one does not compile. */
const CREATE_FORMS: Record<JobKind, () => JSX.Element> = {
  "vocal-separations": () => <SeparationForm kind="vocal-separations" key="vocal-separations" />,
  "stem-splits": () => <SeparationForm kind="stem-splits" key="stem-splits" />,
  "voice-conversions": () => <ConversionForm />,
  tts: () => <TtsForm />,
  "voice-blender": () => <BlendForm />,
};

function useSubmit() {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const run = (work: () => Promise<void>) => async (event: Event) => {
    event.preventDefault();
    setError(null);
    setBusy(true);
    try {
      await work();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return { error, busy, run };
}

function Failure({ error }: { error: string | null }) {
  return error ? (
    <p class="error" role="alert">
      {error}
    </p>
  ) : null;
}

function WebhookField({ value, onChange }: { value: string; onChange(v: string): void }) {
  return (
    <label>
      Webhook URL (optional)
      <input
        type="url"
        name="webhookUrl"
        placeholder="https://example.com/hook"
        value={value}
        onInput={(e) => onChange(e.currentTarget.value)}
      />
    </label>
  );
}

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
    <form onSubmit={submit} aria-label={KIND_LABELS[kind]}>
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
        {busy ? "Uploading…" : `Start ${KIND_LABELS[kind].toLowerCase()}`}
      </button>
    </form>
  );
}

function Slider(props: {
  label: string;
  name: string;
  min: number;
  max: number;
  step: number;
  value: number;
  onChange(v: number): void;
  unit?: string;
}) {
  return (
    <label class="slider">
      <span>
        {props.label}:{" "}
        <output>
          {props.value}
          {props.unit ?? ""}
        </output>{" "}
        <small>
          ({props.min} to {props.max})
        </small>
      </span>
      <input
        type="range"
        name={props.name}
        min={props.min}
        max={props.max}
        step={props.step}
        value={props.value}
        onInput={(e) => props.onChange(e.currentTarget.valueAsNumber)}
      />
    </label>
  );
}

/** A slider for one of a conversion's numeric controls, with the range the API accepts. */
function ControlSlider(props: Omit<Parameters<typeof Slider>[0], "min" | "max"> & { name: ConversionControlName }) {
  const { min, max } = CONVERSION_CONTROLS[props.name];
  return <Slider {...props} min={min} max={max} />;
}

function useVoiceModels(): VoiceModel[] {
  const [models, setModels] = useState<VoiceModel[]>([]);
  useEffect(() => {
    void listVoiceModels().then(setModels);
  }, []);
  return models;
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

const round = (x: number) => Math.round(x * 1000) / 1000;

function BlendForm() {
  const models = useVoiceModels();
  const [count, setCount] = useState(2);
  const [ids, setIds] = useState<Array<number | null>>([null, null, null, null]);
  const [shares, setShares] = useState([0.5, 0.25, 0.25]);
  const [title, setTitle] = useState("");
  const [webhookUrl, setWebhookUrl] = useState("");
  const { error, busy, run } = useSubmit();
  const given = shares.slice(0, count - 1);
  const last = round(1 - given.reduce((a, b) => a + b, 0));
  const setShare = (i: number, v: number) => setShares(shares.map((s, j) => (j === i ? v : s)));
  const submit = run(async () => {
    const chosen = ids.slice(0, count);
    if (chosen.some((id) => id === null)) throw new Error(`Pick ${count} voice models.`);
    if (last < 0) throw new Error("The shares add up to more than 1: lower one of them.");
    const [m1, m2, m3, m4] = chosen as number[];
    const job = await unwrap(
      kits.POST("/api/kits/v1/voice-blender", {
        body: {
          modelId1: m1!,
          modelId2: m2!,
          ...(m3 ? { modelId3: m3 } : {}),
          ...(m4 ? { modelId4: m4 } : {}),
          alpha: given[0]!,
          ...(count >= 3 ? { alpha2: given[1]! } : {}),
          ...(count === 4 ? { alpha3: given[2]! } : {}),
          ...(title ? { title } : {}),
          ...(webhookUrl ? { webhookUrl } : {}),
        },
      }),
    );
    navigate(`#/jobs/voice-blender/${job.id}`);
  });
  return (
    <form onSubmit={submit} aria-label="Voice blend">
      <label>
        Number of models
        <select name="count" value={count} onChange={(e) => setCount(Number(e.currentTarget.value))}>
          {[2, 3, 4].map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </label>
      {Array.from({ length: count }, (_, i) => (
        <div class="blend-slot" key={i}>
          <VoicePicker
            name={`model${i + 1}`}
            legend={`Model ${i + 1}`}
            models={models}
            value={ids[i] ?? null}
            exclude={ids.filter((id, j) => j !== i && j < count && id !== null) as number[]}
            onChange={(id) => setIds(ids.map((x, j) => (j === i ? id : x)))}
          />
          {i < count - 1 ? (
            <Slider
              label={`Share of model ${i + 1}`}
              name={`share${i + 1}`}
              min={0}
              max={1}
              step={0.01}
              value={shares[i]!}
              onChange={(v) => setShare(i, v)}
            />
          ) : (
            <p class={last < 0 ? "error" : "share"} aria-live="polite" data-testid="last-share">
              Share of model {count} (the rest): <output>{last}</output>
            </p>
          )}
        </div>
      ))}
      <label>
        Title of the new model (optional)
        <input name="title" maxLength={200} value={title} onInput={(e) => setTitle(e.currentTarget.value)} />
      </label>
      <WebhookField value={webhookUrl} onChange={setWebhookUrl} />
      <Failure error={error} />
      <button type="submit" disabled={busy || last < 0}>
        {busy ? "Starting…" : "Start blend"}
      </button>
    </form>
  );
}
