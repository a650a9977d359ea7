import { spawn } from "node:child_process";
import type { HarmonyNote } from "./notes.ts";

/** Crossfade between two notes' renders, and the extra each render reads either side (rubberband's onset ramp). */
const CROSSFADE_SECONDS = 0.02;
const PAD_SECONDS = 0.05;

/** A stretch of the timeline shifted by one amount: `[start, end)` in frames of the audio. */
export interface ShiftSegment {
  start: number;
  end: number;
  semitones: number;
}

/**
 * The timeline cut into one segment per note, each shifted by its note's amount: the cut between
 * two notes is the middle of the gap between them (the consonant or breath goes with the nearer
 * note), the first segment starts at 0 and the last ends at `frames`.
 */
export function shiftSegments(notes: HarmonyNote[], hopSeconds: number, sampleRate: number, frames: number): ShiftSegment[] {
  const at = (pitchFrame: number) => Math.min(frames, Math.max(0, Math.round(pitchFrame * hopSeconds * sampleRate)));
  return notes.map((note, i) => ({
    start: i === 0 ? 0 : at((notes[i - 1]!.end + note.start) / 2),
    end: i === notes.length - 1 ? frames : at((note.end + notes[i + 1]!.start) / 2),
    semitones: note.shift,
  }));
}

/**
 * Shifts interleaved stereo `samples` by `semitones` with ffmpeg's `rubberband` filter, formants
 * preserved (the voice keeps its vowel colour and does not sound smaller or larger), through one
 * ffmpeg child (raw float in and out). The result has the input's length and timing: the filter
 * compensates its own latency.
 */
export function shiftPitch(
  samples: Float32Array,
  sampleRate: number,
  semitones: number,
  signal?: AbortSignal,
): Promise<Float32Array> {
  return new Promise((resolve, reject) => {
    signal?.throwIfAborted();
    const ratio = 2 ** (semitones / 12);
    const child = spawn(
      "ffmpeg",
      [
        ...["-hide_banner", "-loglevel", "error", "-nostdin"],
        ...["-f", "f32le", "-ar", String(sampleRate), "-ac", "2", "-i", "pipe:0"],
        ...["-af", `rubberband=pitch=${ratio.toFixed(6)}:formant=preserved`],
        ...["-f", "f32le", "-ac", "2", "pipe:1"],
      ],
      { stdio: ["pipe", "pipe", "pipe"] },
    );
    const chunks: Buffer[] = [];
    let stderr = "";
    const onAbort = () => child.kill("SIGKILL");
    signal?.addEventListener("abort", onAbort, { once: true });
    child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr = (stderr + d).slice(-1000)));
    // ffmpeg may stop reading early when it fails; its exit says why
    child.stdin.on("error", () => {});
    child.on("error", (err) => {
      signal?.removeEventListener("abort", onAbort);
      reject(err);
    });
    child.on("close", (code) => {
      signal?.removeEventListener("abort", onAbort);
      if (signal?.aborted) return reject(signal.reason);
      if (code !== 0) return reject(new Error(`ffmpeg's rubberband exited ${code}: ${stderr.trim().split("\n").at(-1)}`));
      const bytes = Buffer.concat(chunks);
      const out = new Float32Array(samples.length);
      out.set(new Float32Array(bytes.buffer, bytes.byteOffset, Math.min(samples.length, bytes.length >> 2)));
      resolve(out);
    });
    const input = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
    child.stdin.end(input);
  });
}

/**
 * The harmony voice of interleaved stereo `lead`: each segment rendered on its own at its own
 * shift (with 50 ms more either side), and the renders joined with 20 ms equal-power crossfades
 * centred on the cuts.
 */
export async function renderShifted(
  lead: Float32Array,
  sampleRate: number,
  segments: ShiftSegment[],
  options: { signal?: AbortSignal; onProgress?: (fraction: number) => void } = {},
): Promise<Float32Array> {
  const frames = lead.length / 2;
  const out = new Float32Array(lead.length);
  const fade = Math.round(CROSSFADE_SECONDS * sampleRate);
  const pad = Math.round(PAD_SECONDS * sampleRate);
  const halfFade = fade >> 1;
  for (const [i, segment] of segments.entries()) {
    const from = Math.max(0, segment.start - halfFade - pad);
    const to = Math.min(frames, segment.end + halfFade + pad);
    const shifted = await shiftPitch(lead.subarray(2 * from, 2 * to), sampleRate, segment.semitones, options.signal);
    const fadeIn = i > 0;
    const fadeOut = i < segments.length - 1;
    const first = fadeIn ? segment.start - halfFade : segment.start;
    const last = fadeOut ? segment.end + halfFade : segment.end;
    for (let f = Math.max(0, first); f < Math.min(frames, last); f++) {
      let weight = 1;
      if (fadeIn && f < segment.start + halfFade) weight = Math.sin((Math.PI / 2) * ((f - first + 0.5) / fade)) ** 2;
      else if (fadeOut && f >= segment.end - halfFade)
        weight = Math.cos((Math.PI / 2) * ((f - (segment.end - halfFade) + 0.5) / fade)) ** 2;
      out[2 * f] += weight * shifted[2 * (f - from)]!;
      out[2 * f + 1] += weight * shifted[2 * (f - from) + 1]!;
    }
    options.onProgress?.((i + 1) / segments.length);
  }
  return out;
}
