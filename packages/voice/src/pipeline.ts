import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import ffmpeg from "fluent-ffmpeg";
import { AudioDecodeError, countDecodedFrames, decodeToPcm, probeAudio, StereoPcmEncoder, type AudioProbe } from "@mixdown/audio";
import { effectChainFilter } from "./effect-filters.ts";
import type { ConversionParams } from "./conversion-params.ts";
import type { VoiceEngine } from "./voice-engine.ts";

export type { ConversionParams };

export interface ConvertVoiceFileRequest {
  inputPath: string;
  /** the input's probe, when the caller has it (saves probing, and maybe counting, it again) */
  probe?: AudioProbe;
  /** Optional backing track the converted voice is mixed onto. */
  backingPath?: string;
  engine: VoiceEngine;
  params: ConversionParams;
  outDir: string;
  lossless?: "wav" | "flac";
  mp3BitrateKbps?: number;
  onProgress?: (fraction: number) => void;
  /** Stops the conversion (its ffmpeg processes are killed) and rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface ConvertVoiceFileResult {
  output: string;
  lossyOutput: string;
  recombined?: string;
  sampleRate: number;
  frames: number;
  seconds: { prepare: number; convert: number; finish: number };
}

function run(command: ffmpeg.FfmpegCommand, signal?: AbortSignal): Promise<void> {
  signal?.throwIfAborted();
  const kill = () => command.kill("SIGKILL");
  signal?.addEventListener("abort", kill, { once: true });
  return new Promise<void>((resolve, reject) => {
    command.on("error", (err: Error, _stdout: string | null, stderr: string | null) => {
      if (signal?.aborted) return reject(signal.reason);
      reject(new Error(`${err.message}${stderr ? `: ${stderr.split("\n").slice(-4).join(" ")}` : ""}`));
    });
    command.on("end", () => resolve());
    command.run();
  }).finally(() => signal?.removeEventListener("abort", kill));
}

/**
 * Converts one file: pre effects, downmix, resampling to the engine's rate and (for engines that
 * do not take f0) the formant-preserving pitch shift in one ffmpeg pass; the engine's streaming
 * conversion; then post effects, the lossless and mp3 outputs at the input's rate and exact
 * length, and the mix onto the backing track, in one more ffmpeg pass. Memory stays bounded:
 * every stage streams through files in `outDir`.
 */
export async function convertVoiceFile(request: ConvertVoiceFileRequest): Promise<ConvertVoiceFileResult> {
  const { inputPath, engine, params, outDir, signal } = request;
  signal?.throwIfAborted();
  const lossless = request.lossless ?? "wav";
  await mkdir(outDir, { recursive: true });
  const t0 = performance.now();
  const probe = await (request.probe ? Promise.resolve(request.probe) : probeAudio(inputPath)).catch((err: Error) => {
    throw err instanceof AudioDecodeError ? err : new AudioDecodeError(inputPath, err.message, { cause: err });
  });
  const frames = probe.framesExact ? probe.frames : await countDecodedFrames(inputPath, signal);
  if (frames === 0) throw new AudioDecodeError(inputPath, "no audio samples");
  const inputRate = probe.sampleRate;

  const prepared = join(outDir, "prepared.wav");
  const filters: string[] = [];
  const pre = effectChainFilter("pre", params.pre, inputRate);
  if (pre) filters.push(pre);
  filters.push(probe.channels === 1 ? "pan=mono|c0=c0" : "pan=mono|c0=0.5*c0+0.5*c1");
  filters.push(`aresample=${engine.sampleRate}:resampler=soxr`);
  if (!engine.shiftsPitch && params.pitchShift !== 0) {
    filters.push(`rubberband=pitch=${2 ** (params.pitchShift / 12)}:formant=preserved`);
  }
  await run(
    ffmpeg(inputPath)
      .inputOptions(["-nostdin", "-hide_banner"])
      .outputOptions(["-map", "0:a:0", "-vn", "-af", filters.join(","), "-c:a", "pcm_f32le"])
      .format("wav")
      .output(prepared),
    signal,
  ).catch((err: Error) => {
    if (signal?.aborted) throw signal.reason;
    throw new AudioDecodeError(inputPath, err.message, { cause: err });
  });
  const t1 = performance.now();

  // Mono blocks at the engine's rate, read from the prepared file once per pass.
  const preparedFrames = Math.max(1, Math.round((frames * engine.sampleRate) / inputRate));
  let done = 0;
  const source = () =>
    (async function* () {
      for await (const block of decodeToPcm(prepared, {
        sampleRate: engine.sampleRate,
        blockFrames: 65536,
        ...(signal ? { signal } : {}),
      })) {
        const mono = new Float32Array(block.length / 2);
        for (let i = 0; i < mono.length; i++) mono[i] = block[2 * i]!;
        yield mono;
      }
    })();
  const converted = join(outDir, "converted.wav");
  const outputRate = engine.outputSampleRate ?? engine.sampleRate;
  const encoder = new StereoPcmEncoder({
    inputSampleRate: outputRate,
    outputSampleRate: inputRate,
    frames,
    targets: [{ format: "wav", path: converted, sampleFormat: "f32" }],
    ...(signal ? { signal } : {}),
  });
  try {
    for await (const block of engine.convert(source, params)) {
      signal?.throwIfAborted();
      const stereo = new Float32Array(block.length * 2);
      for (let i = 0; i < block.length; i++) stereo[2 * i] = stereo[2 * i + 1] = block[i]!;
      await encoder.write(stereo);
      done += block.length;
      request.onProgress?.(Math.min(1, (done * engine.sampleRate) / outputRate / preparedFrames));
    }
    await encoder.finish();
  } catch (err) {
    await encoder.abort();
    throw err;
  }
  await rm(prepared, { force: true });
  const t2 = performance.now();

  const output = join(outDir, `output.${lossless}`);
  const lossyOutput = join(outDir, "output.mp3");
  const recombined = request.backingPath ? join(outDir, `recombined.${lossless}`) : undefined;
  const post = effectChainFilter("post", params.post, inputRate);
  const exact = `apad=whole_len=${frames},atrim=end_sample=${frames}`;
  const graph = [`[0:a]${post ? `${post},` : ""}${exact},asplit=${recombined ? 3 : 2}[out][lossy]${recombined ? "[voice]" : ""}`];
  if (recombined) {
    graph.push(
      `[1:a]aresample=${inputRate}:resampler=soxr,aformat=channel_layouts=stereo[backing]`,
      `[voice][backing]amix=inputs=2:normalize=0:duration=longest[mix]`,
    );
  }
  const losslessCodec = lossless === "flac" ? ["-c:a", "flac", "-sample_fmt", "s32"] : ["-c:a", "pcm_f32le"];
  const command = ffmpeg(converted).inputOptions(["-nostdin", "-hide_banner"]);
  if (request.backingPath) command.input(request.backingPath);
  command
    .complexFilter(graph.join(";"))
    .output(output)
    .outputOptions(["-map", "[out]", ...losslessCodec])
    .output(lossyOutput)
    .outputOptions(["-map", "[lossy]", "-c:a", "libmp3lame", "-b:a", `${request.mp3BitrateKbps ?? 320}k`]);
  if (recombined) command.output(recombined).outputOptions(["-map", "[mix]", ...losslessCodec]);
  await run(command, signal).catch((err: Error) => {
    if (signal?.aborted) throw signal.reason;
    if (request.backingPath && /backing|Invalid data|1:a/i.test(err.message))
      throw new AudioDecodeError(request.backingPath, err.message, { cause: err });
    throw err;
  });
  await rm(converted, { force: true });
  const t3 = performance.now();
  return {
    output,
    lossyOutput,
    ...(recombined ? { recombined } : {}),
    sampleRate: inputRate,
    frames,
    seconds: { prepare: (t1 - t0) / 1000, convert: (t2 - t1) / 1000, finish: (t3 - t2) / 1000 },
  };
}
