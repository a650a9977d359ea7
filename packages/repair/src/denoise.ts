import { decodeToPcm, probeAudio, StereoPcmEncoder, type AudioProbe, type EncodeTarget } from "@mixdown/audio";
import { RNNOISE_FRAME, RNNOISE_RATE, RNNOISE_SCALE, RnnoiseChannel } from "./rnnoise.ts";

export interface DenoiseFileOptions {
  /** the input's probe, when the caller has it (saves one ffprobe run) */
  probe?: AudioProbe;
  /** the files to write (one encoder: a lossless file and an mp3 together) */
  targets: EncodeTarget[];
  /** fraction of the input done, 0..1 */
  onProgress?: (fraction: number) => void;
  signal?: AbortSignal;
}

export interface DenoiseFileResult {
  /** frames written, at the input's rate */
  frames: number;
  /** the input's rate, which the outputs keep */
  sampleRate: number;
  /** the share of 10 ms frames RNNoise judged voiced (probability above 0.5), over every channel it ran */
  voicedShare: number;
}

/**
 * RNNoise over a file, as its reference demo runs it: the input resampled to 48 kHz (ffmpeg's
 * soxr, as every decode of Mixdown's), each channel through its own RNNoise state in 480-sample
 * frames on the 16-bit scale, the first frame out (the algorithm's one-frame delay) dropped as the
 * demo drops it, and a frame of silence at the end to push the last samples out. A mono input runs
 * once and is written to both channels, as every Mixdown output is stereo. The outputs are
 * resampled back to the input's rate and cut to its length (a 48 kHz input is written as is, so
 * its samples are RNNoise's own: `test/rnnoise-reference.test.ts` holds them to the C build's).
 * Streams: memory stays flat whatever the input's length.
 */
export async function denoiseFile(inputPath: string, options: DenoiseFileOptions): Promise<DenoiseFileResult> {
  const { signal, onProgress } = options;
  const probe = options.probe ?? (await probeAudio(inputPath));
  const channels = probe.channels === 1 ? 1 : 2;
  const states = await Promise.all(Array.from({ length: channels }, () => RnnoiseChannel.create()));
  const encoder = new StereoPcmEncoder({
    inputSampleRate: RNNOISE_RATE,
    outputSampleRate: probe.sampleRate,
    ...(probe.framesExact && probe.sampleRate !== RNNOISE_RATE ? { frames: probe.frames } : {}),
    targets: options.targets,
    ...(signal ? { signal } : {}),
  });
  const expected = Math.max(1, Math.round(probe.duration * RNNOISE_RATE));
  const frames = states.map(() => new Float32Array(RNNOISE_FRAME));
  let filled = 0;
  let decoded = 0;
  let written = 0;
  let first = true;
  let voiced = 0;
  let processed = 0;

  // one frame of every channel denoised, and (past the first) written interleaved
  const runFrame = async (): Promise<void> => {
    for (const [c, state] of states.entries()) {
      if (state.process(frames[c]!) > 0.5) voiced++;
      processed++;
    }
    if (first) {
      first = false;
      return;
    }
    const count = Math.min(RNNOISE_FRAME, decoded - written);
    if (count <= 0) return;
    const block = new Float32Array(count * 2);
    const left = frames[0]!;
    const right = frames[channels - 1]!;
    for (let i = 0; i < count; i++) {
      block[2 * i] = left[i]! / RNNOISE_SCALE;
      block[2 * i + 1] = right[i]! / RNNOISE_SCALE;
    }
    written += count;
    await encoder.write(block);
  };

  try {
    for await (const block of decodeToPcm(inputPath, { sampleRate: RNNOISE_RATE, probe, ...(signal ? { signal } : {}) })) {
      const blockFrames = block.length / 2;
      decoded += blockFrames;
      for (let i = 0; i < blockFrames; i++) {
        for (let c = 0; c < channels; c++) frames[c]![filled] = block[2 * i + c]! * RNNOISE_SCALE;
        if (++filled === RNNOISE_FRAME) {
          await runFrame();
          filled = 0;
        }
      }
      onProgress?.(Math.min(0.99, decoded / expected));
    }
    // the partial last frame padded with silence, then one frame of silence for the delayed one
    for (let pass = 0; pass < 2 && written < decoded; pass++) {
      for (const frame of frames) frame.fill(0, filled);
      filled = 0;
      await runFrame();
    }
    await encoder.finish();
  } catch (err) {
    await encoder.abort();
    throw err;
  } finally {
    for (const state of states) state.destroy();
  }
  onProgress?.(1);
  return {
    frames: Math.round((written * probe.sampleRate) / RNNOISE_RATE),
    sampleRate: probe.sampleRate,
    voicedShare: processed ? voiced / processed : 0,
  };
}
