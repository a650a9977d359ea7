import { encode } from "fast-png";
import { logMelFrames } from "@mixdown/voice";

export const COVER_SIZE = 512;
const BANDS = 48;
/** Band powers more than 60 dB under the loudest are drawn as silence. */
const FLOOR = Math.log(1e6);

/**
 * A voice model's cover: the log-mel spectrogram of its demo clip wrapped into a ring (time runs
 * clockwise from the top, low bands inside), in a hue taken from where the voice's energy sits
 * on the mel scale. Two voices saying the same phrase therefore get visibly different pictures,
 * and the same demo always gives the same PNG, byte for byte.
 */
export function drawVoiceCover(signal: Float32Array, sampleRate: number): Uint8Array {
  const frames = [...logMelFrames(signal, sampleRate, BANDS)].map((f) => f.logMel);
  if (frames.length === 0) throw new Error("the demo is too short to draw a cover from");
  let peak = -Infinity;
  for (const frame of frames) for (const v of frame) peak = Math.max(peak, v);
  const level = (v: number) => Math.min(1, Math.max(0, (v - (peak - FLOOR)) / FLOOR));

  let weighted = 0;
  let total = 0;
  for (const frame of frames) {
    frame.forEach((v, band) => {
      const w = level(v);
      weighted += w * band;
      total += w;
    });
  }
  const centroid = total > 0 ? weighted / total / (BANDS - 1) : 0.5;
  const hue = (200 + 330 * centroid) % 360;

  const size = COVER_SIZE;
  const centre = (size - 1) / 2;
  const inner = size * 0.16;
  const outer = size * 0.47;
  const rgb = new Uint8Array(size * size * 3);
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const dx = x - centre;
      const dy = y - centre;
      const r = Math.hypot(dx, dy);
      let colour: [number, number, number];
      if (r >= inner && r < outer) {
        const turn = (Math.atan2(dx, -dy) / (2 * Math.PI) + 1) % 1;
        const frame = frames[Math.min(frames.length - 1, Math.floor(turn * frames.length))]!;
        const band = Math.min(BANDS - 1, Math.floor(((r - inner) / (outer - inner)) * BANDS));
        const v = level(frame[band]!);
        colour = hsl(hue + 50 * v, 0.75, 0.1 + 0.6 * v);
      } else {
        colour = hsl(hue, 0.35, r < inner ? 0.16 : Math.max(0.04, 0.12 - (r - outer) / size));
      }
      rgb.set(colour, (y * size + x) * 3);
    }
  }
  return encode({ width: size, height: size, data: rgb, channels: 3, depth: 8 });
}

/** HSL (hue in degrees, saturation and lightness 0..1) to 8-bit RGB. */
function hsl(hue: number, s: number, l: number): [number, number, number] {
  const h = (((hue % 360) + 360) % 360) / 360;
  const q = l < 0.5 ? l * (1 + s) : l + s - l * s;
  const p = 2 * l - q;
  const channel = (t: number) => {
    const u = (t + 1) % 1;
    const v = u < 1 / 6 ? p + (q - p) * 6 * u : u < 1 / 2 ? q : u < 2 / 3 ? p + (q - p) * (2 / 3 - u) * 6 : p;
    return Math.round(v * 255);
  };
  return [channel(h + 1 / 3), channel(h), channel(h - 1 / 3)];
}
