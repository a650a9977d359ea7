import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { VoiceModel } from "@mixdown/kits-client";
import { listVoiceModels } from "../api.ts";

/** What the create forms' file inputs accept: the server decides the format from the bytes. */
export const AUDIO_ACCEPT = ".wav,.mp3,.flac,.webm,audio/*";

/** A form's submit: the server's message on failure, and whether it is still running. */
export function useSubmit() {
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

export function Failure({ error }: { error: string | null }) {
  return error ? (
    <p class="error" role="alert">
      {error}
    </p>
  ) : null;
}

/** A labelled link field (`label` may carry markup). */
export function UrlField(props: {
  label: ComponentChildren;
  name: string;
  placeholder: string;
  value: string;
  onChange(v: string): void;
  required?: boolean;
}) {
  return (
    <label>
      <span>{props.label}</span>
      <input
        type="url"
        name={props.name}
        required={props.required}
        placeholder={props.placeholder}
        value={props.value}
        onInput={(e) => props.onChange(e.currentTarget.value)}
      />
    </label>
  );
}

export function WebhookField({ value, onChange }: { value: string; onChange(v: string): void }) {
  return (
    <UrlField
      label="Webhook URL (optional)"
      name="webhookUrl"
      placeholder="https://example.com/hook"
      value={value}
      onChange={onChange}
    />
  );
}

export function Slider(props: {
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

/** The voice models the caller may use, loaded once. */
export function useVoiceModels(): VoiceModel[] {
  const [models, setModels] = useState<VoiceModel[]>([]);
  useEffect(() => {
    void listVoiceModels().then(setModels);
  }, []);
  return models;
}
