import { useEffect, useState } from "preact/hooks";
import type { VoiceBlendJob, VoiceModel } from "@mixdown/kits-client";
import { kits, unwrap } from "../api.ts";
import { Failure, Slider, useSubmit, useVoiceModels, WebhookField } from "../components/form-parts.tsx";
import { Cover, DemoButton, VoicePicker } from "../components/VoicePicker.tsx";
import { navigate } from "../main.tsx";
import type { KindView } from "./index.ts";

/** Voice blends: two to four voice models in, a new one mixed from them out. */
export const voiceBlend: KindView<"voice-blender"> = {
  label: "Voice blend",
  Form: () => <BlendForm />,
  Outputs: ({ job }) => <BlendResult job={job} />,
};

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
