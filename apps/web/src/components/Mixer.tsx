import { useEffect, useRef, useState } from "preact/hooks";
import { Player } from "./Player.tsx";

export interface Track {
  name: string;
  url: string;
  /** Download links: the lossless file and, when the service made one, its mp3. */
  lossless?: string | null;
  lossy?: string | null;
}

/**
 * The outputs of a job, one player each, played together to audition a remix: solo and mute per
 * track act on the tracks' own audio elements. With `ab`, the first two tracks are A and B.
 */
export function Mixer({ tracks, ab }: { tracks: Track[]; ab?: boolean }) {
  const elements = useRef(new Map<string, HTMLAudioElement>());
  const [muted, setMuted] = useState<Set<string>>(new Set());
  const [solo, setSolo] = useState<Set<string>>(new Set());
  const [playing, setPlaying] = useState(false);

  useEffect(() => {
    for (const [name, el] of elements.current) el.muted = muted.has(name) || (solo.size > 0 && !solo.has(name));
  }, [muted, solo, tracks]);

  const toggle = (set: Set<string>, name: string) => {
    const next = new Set(set);
    if (!next.delete(name)) next.add(name);
    return next;
  };

  const playAll = async () => {
    const all = [...elements.current.values()];
    const at = all[0]?.currentTime ?? 0;
    for (const el of all) el.currentTime = at;
    await Promise.all(all.map((el) => el.play()));
    setPlaying(true);
  };
  const pauseAll = () => {
    for (const el of elements.current.values()) el.pause();
    setPlaying(false);
  };
  const [a, b] = tracks;

  return (
    <section class="mixer" aria-label="Outputs">
      <div class="toolbar">
        <button type="button" onClick={() => (playing ? pauseAll() : void playAll())}>
          {playing ? "Pause all" : "Play all together"}
        </button>
        {ab && a && b && (
          <button
            type="button"
            onClick={() => setSolo(new Set([solo.has(a.name) ? b.name : a.name]))}
            aria-label={`A/B: hear ${solo.has(a.name) ? b.name : a.name} only`}
          >
            A/B: {solo.has(a.name) ? `hear ${b.name}` : `hear ${a.name}`}
          </button>
        )}
      </div>
      {tracks.map((track) => (
        <div class="track" key={track.name}>
          <Player
            title={track.name}
            url={track.url}
            audioRef={(el) => (el ? elements.current.set(track.name, el) : elements.current.delete(track.name))}
          />
          <div class="track-controls">
            <button type="button" aria-pressed={solo.has(track.name)} onClick={() => setSolo(toggle(solo, track.name))}>
              Solo
            </button>
            <button type="button" aria-pressed={muted.has(track.name)} onClick={() => setMuted(toggle(muted, track.name))}>
              Mute
            </button>
            {track.lossless && (
              <a class="button" href={track.lossless} download>
                Download lossless
              </a>
            )}
            {track.lossy && (
              <a class="button" href={track.lossy} download>
                Download mp3
              </a>
            )}
          </div>
        </div>
      ))}
    </section>
  );
}
