import { useRef, useState } from "preact/hooks";
import type { VoiceModel } from "@mixdown/kits-client";
import { mediaUrl } from "../api.ts";

/** A cover image, or the title's initial while the model has no image the browser can load. */
export function Cover({ model, size = 56 }: { model: VoiceModel; size?: number }) {
  const src = model.usable ? mediaUrl(model.imageUrl) : null;
  return src ? (
    <img class="cover" src={src} alt="" width={size} height={size} loading="lazy" />
  ) : (
    <span class="cover placeholder" style={{ width: `${size}px`, height: `${size}px` }} aria-hidden="true">
      {model.title.slice(0, 1)}
    </span>
  );
}

/** Plays a model's demo clip; one at a time on the page. */
export function DemoButton({ model }: { model: VoiceModel }) {
  const [playing, setPlaying] = useState(false);
  const audio = useRef<HTMLAudioElement | null>(null);
  const src = model.usable ? mediaUrl(model.demoUrl) : null;
  if (!src) return null;
  const toggle = () => {
    if (!audio.current) {
      audio.current = new Audio(src);
      audio.current.addEventListener("ended", () => setPlaying(false));
      audio.current.addEventListener("pause", () => setPlaying(false));
      audio.current.addEventListener("playing", () => setPlaying(true));
    }
    if (audio.current.paused) {
      for (const other of document.querySelectorAll<HTMLAudioElement>("audio")) other.pause();
      void audio.current.play();
    } else audio.current.pause();
  };
  return (
    <button type="button" class="small" onClick={toggle} aria-label={`${playing ? "Stop" : "Play"} the demo of ${model.title}`}>
      {playing ? "■ Demo" : "▶ Demo"}
    </button>
  );
}

/** Radio cards of the usable voice models (catalogue and own), with cover and demo. */
export function VoicePicker(props: {
  name: string;
  legend: string;
  models: VoiceModel[];
  value: number | null;
  onChange(id: number): void;
  exclude?: number[];
}) {
  const usable = props.models.filter((m) => m.usable && !props.exclude?.includes(m.id));
  return (
    <fieldset class="voices">
      <legend>{props.legend}</legend>
      {usable.length === 0 && <p class="hint">No usable voice model yet: import one under Voice models.</p>}
      {usable.map((model) => (
        <label class="voice-card" key={model.id}>
          <input
            type="radio"
            name={props.name}
            value={model.id}
            checked={props.value === model.id}
            onChange={() => props.onChange(model.id)}
          />
          <Cover model={model} size={40} />
          <span class="voice-title">
            {model.title}
            <small>{model.public ? "catalogue" : "own"}</small>
          </span>
          <DemoButton model={model} />
        </label>
      ))}
    </fieldset>
  );
}
