// A separation's output control (issue 55): how its lossless files are written and which stems it
// keeps. The API checks and resolves a create's options with these; the worker writes what the row
// stores. Imports nothing, so the API, the worker and the batches read the same rules.

export const LOSSLESS_FORMATS = ["wav", "flac"] as const;
export type LosslessFormat = (typeof LOSSLESS_FORMATS)[number];

/** 16-bit and 24-bit integer, 32-bit float: what ffprobe calls the WAV codecs pcm_s16le, pcm_s24le, pcm_f32le. */
export const OUTPUT_SAMPLE_FORMATS = ["s16", "s24", "f32"] as const;
export type OutputSampleFormat = (typeof OUTPUT_SAMPLE_FORMATS)[number];

/** The sample formats each lossless format can hold: ffmpeg 5.1's flac encoder writes 16- and 24-bit integers only. */
export const SAMPLE_FORMATS_OF: Record<LosslessFormat, readonly OutputSampleFormat[]> = {
  wav: ["s16", "s24", "f32"],
  flac: ["s16", "s24"],
};

/** What a format is written as when a job asks for the format but not its sample format: the server's defaults. */
export const DEFAULT_SAMPLE_FORMAT: Record<LosslessFormat, OutputSampleFormat> = { wav: "f32", flac: "s24" };

/** ffmpeg's flac `-compression_level`: 0 fastest, 12 smallest; 5 is ffmpeg's default. */
export const FLAC_COMPRESSION_LEVELS = { minimum: 0, maximum: 12, default: 5 } as const;

/**
 * The rates a job may ask for its lossless files (Hz): the common rates from telephone to
 * high-resolution audio, each one every lossless format writes at (FLAC frame headers code these
 * exactly; an arbitrary rate such as 96001 has no code and ffmpeg's flac encoder refuses it).
 */
export const OUTPUT_SAMPLE_RATES = [
  8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000, 88200, 96000, 176400, 192000,
] as const;

/** What a create asked for (each absent: the default). */
export interface OutputRequest {
  outputFormat?: LosslessFormat;
  sampleFormat?: OutputSampleFormat;
  compressionLevel?: number;
  sampleRate?: number;
  /** the record's stem names to keep, as the create listed them */
  stems?: readonly string[];
}

/**
 * A job's output options as its row stores them (`SeparationJob.outputOptions`): everything
 * resolved at create, so the worker writes exactly what was checked. Null fields: the default
 * (`sampleRate` null: the input's rate; `stems` null: every stem; `compressionLevel` null: WAV).
 */
export interface OutputOptions {
  format: LosslessFormat;
  sampleFormat: OutputSampleFormat;
  compressionLevel: number | null;
  sampleRate: number | null;
  stems: string[] | null;
}

/** What a job wrote, as its record's `output` says once it succeeded. */
export interface WrittenOutput {
  format: LosslessFormat;
  sampleFormat: OutputSampleFormat;
  compressionLevel: number | null;
  sampleRate: number;
  stems: string[];
}

/** Whether a create asked for any output option (a job that asked none is written and recorded as always). */
export function asksForOutput(request: OutputRequest): boolean {
  return Object.values(request).some((v) => v !== undefined);
}

/**
 * A create's output options resolved against the server's lossless format (LOSSLESS_FORMAT), or
 * the problems of the combination, each naming its fields. `stems` is checked here for its form
 * (none empty, none twice); which names a job may keep depends on its models (`stemsProblem`).
 */
export function resolveOutputOptions(
  request: OutputRequest,
  serverFormat: LosslessFormat,
): { options: OutputOptions; problems?: undefined } | { options?: undefined; problems: string[] } {
  const format = request.outputFormat ?? serverFormat;
  const problems: string[] = [];
  const how = request.outputFormat ? `outputFormat=${format}` : `the server's lossless format (${format})`;
  if (request.sampleFormat && !SAMPLE_FORMATS_OF[format].includes(request.sampleFormat))
    problems.push(
      `sampleFormat=${request.sampleFormat} cannot be written with ${how}: FLAC holds ${SAMPLE_FORMATS_OF.flac.join(" or ")} (use outputFormat=wav for f32)`,
    );
  if (request.compressionLevel !== undefined && format !== "flac")
    problems.push(`compressionLevel is a FLAC option; ${how} is not compressed (use outputFormat=flac)`);
  if (request.sampleRate !== undefined && !(OUTPUT_SAMPLE_RATES as readonly number[]).includes(request.sampleRate))
    problems.push(`sampleRate ${request.sampleRate} is not an output rate (one of ${OUTPUT_SAMPLE_RATES.join(", ")} Hz)`);
  const stems = request.stems?.map((s) => s.trim());
  if (stems) {
    if (stems.length === 0 || stems.some((s) => s === ""))
      problems.push("stems must name at least one stem, comma-separated, none empty");
    const repeated = stems.filter((s, i) => s !== "" && stems.indexOf(s) !== i);
    if (repeated.length > 0)
      problems.push(`stems names ${[...new Set(repeated)].map((s) => JSON.stringify(s)).join(", ")} twice`);
  }
  if (problems.length > 0) return { problems };
  return {
    options: {
      format,
      sampleFormat: request.sampleFormat ?? DEFAULT_SAMPLE_FORMAT[format],
      compressionLevel: format === "flac" ? (request.compressionLevel ?? FLAC_COMPRESSION_LEVELS.default) : null,
      sampleRate: request.sampleRate ?? null,
      stems: stems ?? null,
    },
  };
}

/** The names of `asked` a job cannot keep, worded with the ones it can; null when all are among them. */
export function stemsProblem(asked: readonly string[], valid: readonly string[], noun: string): string | null {
  const unknown = asked.filter((s) => !valid.includes(s));
  if (unknown.length === 0) return null;
  return `stems names ${unknown.map((s) => JSON.stringify(s)).join(", ")}, which this ${noun} does not publish (its stems: ${valid.join(", ")})`;
}
