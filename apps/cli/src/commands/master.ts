import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { prepareFfmpeg, probeAudio, StereoPcmEncoder } from "@mixdown/audio";
import { measureLoudness, type Loudness } from "@mixdown/analysis/loudness";
import {
  LOUDNESS_TARGET_DEFAULTS,
  LOUDNESS_TARGET_RANGES,
  matchReference,
  MATCHERING_DEFAULTS,
  normalizeLoudness,
} from "@mixdown/mastering";
import type { CommandOutput } from "./separate.ts";

const { integratedLufs: lufsRange, truePeakDb: peakRange } = LOUDNESS_TARGET_RANGES;

const USAGE = `usage: mixdown master <file> --reference <ref> --out <dir>
       mixdown master <file> --lufs <LUFS> [--true-peak <dBTP>] --out <dir>

Masters <file> offline, as the service's masterings do, into <dir>/master.wav (24-bit),
master-16bit.wav and master.mp3, and prints the loudness before and after.

  --reference REF     reference mastering: Matchering's algorithm with its defaults (the
                      output is 44.1 kHz stereo; both files at most ${MATCHERING_DEFAULTS.maxLength / 60} minutes)
  --lufs L            loudness mode: ffmpeg's two-pass loudnorm to L LUFS integrated
                      (${lufsRange.minimum} to ${lufsRange.maximum}; -14 is the streaming services' usual target)
  --true-peak DB      loudness mode: the true peak ceiling, dBTP (${peakRange.minimum} to ${peakRange.maximum}, default ${LOUDNESS_TARGET_DEFAULTS.truePeakDb})
  --out DIR           output directory, created if missing (required)
  --mp3-kbps N        mp3 bitrate (default 320)
`;

class UsageError extends Error {}

function numberIn(value: string | undefined, flag: string, range: { minimum: number; maximum: number }): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < range.minimum || n > range.maximum)
    throw new UsageError(`${flag} must be a number from ${range.minimum} to ${range.maximum}, got "${value}"`);
  return n;
}

const describe = (l: Loudness) =>
  `${l.integratedLufs === null ? "-inf" : l.integratedLufs.toFixed(1)} LUFS, LRA ${l.loudnessRangeLu.toFixed(1)} LU, true peak ${l.truePeakDbtp === null ? "-inf" : l.truePeakDbtp.toFixed(1)} dBTP`;

/** `--lufs -14` as `--lufs=-14`: parseArgs takes a dash-led value only in that form, and loudness targets are negative. */
function joinNegativeValues(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const next = argv[i + 1];
    if ((argv[i] === "--lufs" || argv[i] === "--true-peak") && next !== undefined && /^-\d/.test(next))
      out.push(`${argv[i]}=${argv[++i]}`);
    else out.push(argv[i]!);
  }
  return out;
}

/** `mixdown master`: the mastering kind's work on local files, no service needed (0 done, 1 failed, 2 bad arguments). */
export async function masterCommand(argv: string[], io: CommandOutput = process): Promise<number> {
  try {
    const { values, positionals } = parseArgs({
      args: joinNegativeValues(argv),
      allowPositionals: true,
      options: {
        reference: { type: "string" },
        lufs: { type: "string" },
        "true-peak": { type: "string" },
        out: { type: "string" },
        "mp3-kbps": { type: "string", default: "320" },
        help: { type: "boolean", short: "h" },
      },
    });
    if (values.help) {
      io.stdout.write(USAGE);
      return 0;
    }
    if (positionals.length !== 1) throw new UsageError("expected exactly one input file");
    if (!values.out) throw new UsageError("--out is required");
    const lufs = numberIn(values.lufs, "--lufs", lufsRange);
    const truePeak = numberIn(values["true-peak"], "--true-peak", peakRange);
    const loudness = lufs !== undefined || truePeak !== undefined;
    if (values.reference !== undefined && loudness) throw new UsageError("give --reference or --lufs/--true-peak, not both");
    if (values.reference === undefined && !loudness) throw new UsageError("give --reference REF or --lufs L");
    const kbps = Number(values["mp3-kbps"]);
    if (!Number.isInteger(kbps) || kbps < 8 || kbps > 320)
      throw new UsageError(`--mp3-kbps must be 8 to 320, got "${values["mp3-kbps"]}"`);

    const inputPath = resolve(positionals[0]!);
    const outDir = resolve(values.out);
    await Promise.all([mkdir(outDir, { recursive: true }), prepareFfmpeg()]);
    const outputs = {
      wav24: join(outDir, "master.wav"),
      wav16: join(outDir, "master-16bit.wav"),
      mp3: join(outDir, "master.mp3"),
    };
    const showProgress = io.stderr.isTTY === true;
    const onProgress = (f: number) => showProgress && io.stderr.write(`\r${(100 * f).toFixed(0)}%`);
    const started = performance.now();
    const before = await measureLoudness(inputPath);
    let processor: string;
    if (values.reference !== undefined) {
      const scratch = await mkdtemp(join(outDir, ".master-"));
      const encoder = new StereoPcmEncoder({
        inputSampleRate: MATCHERING_DEFAULTS.internalSampleRate,
        targets: [
          { format: "wav", path: outputs.wav24, sampleFormat: "s24" },
          { format: "wav", path: outputs.wav16, sampleFormat: "s16" },
          { format: "mp3", path: outputs.mp3, bitrateKbps: kbps },
        ],
      });
      try {
        await matchReference(inputPath, resolve(values.reference), {
          write: (b) => encoder.write(b),
          scratchDir: scratch,
          onProgress,
        });
        await encoder.finish();
      } catch (err) {
        await encoder.abort();
        throw err;
      } finally {
        await rm(scratch, { recursive: true, force: true });
      }
      processor = "matchering";
    } else {
      const { applied } = await normalizeLoudness(inputPath, {
        target: {
          integratedLufs: lufs ?? LOUDNESS_TARGET_DEFAULTS.integratedLufs,
          truePeakDb: truePeak ?? LOUDNESS_TARGET_DEFAULTS.truePeakDb,
        },
        sampleRate: (await probeAudio(inputPath)).sampleRate,
        outputs: [
          { format: "wav", path: outputs.wav24, bitDepth: 24 },
          { format: "wav", path: outputs.wav16, bitDepth: 16 },
          { format: "mp3", path: outputs.mp3, bitrateKbps: kbps },
        ],
        onProgress,
      });
      processor = `ffmpeg loudnorm ${applied.normalizationType}`;
    }
    if (showProgress) io.stderr.write("\r");
    const after = await measureLoudness(outputs.wav24);
    for (const path of Object.values(outputs)) io.stdout.write(`${path}\n`);
    io.stdout.write(`before: ${describe(before)}\nafter:  ${describe(after)}\n`);
    io.stdout.write(`${processor}, ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
    return 0;
  } catch (err) {
    if (err instanceof UsageError || (err as NodeJS.ErrnoException).code?.startsWith("ERR_PARSE_ARGS")) {
      io.stderr.write(`mixdown master: ${(err as Error).message}\n\n${USAGE}`);
      return 2;
    }
    io.stderr.write(`mixdown master: ${(err as Error).message}\n`);
    return 1;
  }
}
