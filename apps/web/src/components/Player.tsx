import { useEffect, useRef } from "preact/hooks";
import WaveSurfer from "wavesurfer.js";
import SpectrogramPlugin from "wavesurfer.js/dist/plugins/spectrogram.esm.js";

/**
 * One audio output: its waveform and spectrogram (wavesurfer.js decodes the file), played through
 * a real `<audio>` element so that mute, solo and synced playback work on the element itself.
 */
export function Player(props: { title: string; url: string; audioRef?: (el: HTMLAudioElement | null) => void }) {
  const waveRef = useRef<HTMLDivElement>(null);
  const spectrumRef = useRef<HTMLDivElement>(null);
  const audioRef = useRef<HTMLAudioElement>(null);

  useEffect(() => {
    const audio = audioRef.current!;
    const surfer = WaveSurfer.create({
      container: waveRef.current!,
      media: audio,
      url: props.url,
      height: 64,
      waveColor: "#8b8fd9",
      progressColor: "#4f46e5",
      cursorColor: "#111827",
      normalize: true,
      sampleRate: 16000,
      plugins: [
        SpectrogramPlugin.create({
          container: spectrumRef.current!,
          height: 96,
          labels: false,
          fftSamples: 256,
          scale: "mel",
          useWebWorker: false,
        }),
      ],
    });
    // A waveform that cannot be drawn (e.g. storage on another origin without CORS) leaves the player working.
    surfer.on("error", () => waveRef.current?.classList.add("unavailable"));
    return () => surfer.destroy();
  }, [props.url]);

  useEffect(() => {
    props.audioRef?.(audioRef.current);
    return () => props.audioRef?.(null);
  }, []);

  return (
    <figure class="player">
      <figcaption>{props.title}</figcaption>
      <audio ref={audioRef} controls preload="auto" data-title={props.title} />
      <div ref={waveRef} class="wave" aria-label={`${props.title} waveform`} role="img" />
      <div ref={spectrumRef} class="spectrum" aria-label={`${props.title} spectrogram`} role="img" />
    </figure>
  );
}
