// RVC voice models as people share them: the `.pth` RVC's training exports. Identified from the
// unpickled file (no PyTorch: the caller reads it with @mixdown/python/torch-file), converted
// once to the ONNX graph the worker runs by Mixdown's own synthesizer (python/mixdown_voice).
import { lastJsonLine, runPythonModule } from "@mixdown/python";
import { VoiceModelFileError } from "../model-file.ts";
import { VOICE_PYTHON_PATH } from "./python-path.ts";

export interface RvcCheckpointInfo {
  version: "v1" | "v2";
  /** 1: the model takes f0 (NSF decoder); 0: it does not. */
  f0: 0 | 1;
  sampleRate: 32000 | 40000 | 48000;
  /** Rows of the speaker table (`emb_g.weight`), as RVC counts them. */
  speakers: number;
}

const RATES: Record<string, RvcCheckpointInfo["sampleRate"]> = { "32k": 32000, "40k": 40000, "48k": 48000 };

function isTensor(value: unknown): value is { shape: readonly number[] } {
  return typeof value === "object" && value !== null && (value as { tensor?: unknown }).tensor === true;
}

/**
 * What an unpickled `.pth` says about itself (its `config`, `version`, `f0`, `sr` and speaker
 * table), or a VoiceModelFileError naming why it is not an RVC voice model Mixdown converts.
 */
export function describeRvcCheckpoint(value: unknown): RvcCheckpointInfo {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new VoiceModelFileError("not an RVC voice model: the file does not hold a dict");
  const checkpoint = value as Record<string, unknown>;
  const weight = checkpoint.weight as Record<string, unknown> | undefined;
  const config = checkpoint.config;
  if (typeof weight !== "object" || weight === null || !Array.isArray(config)) {
    const keys = Object.keys(checkpoint).slice(0, 6).join(", ");
    throw new VoiceModelFileError(
      `not an RVC voice model: expected RVC's exported .pth (a dict with weight and config), found ${keys || "an empty dict"}${"model" in checkpoint ? " (a training checkpoint G_*.pth? export the small model from RVC's ckpt tab)" : ""}`,
    );
  }
  if (config.length !== 18)
    throw new VoiceModelFileError(`not an RVC voice model: its config has ${config.length} items, RVC's has 18`);
  const table = weight["emb_g.weight"];
  if (!isTensor(table) || table.shape.length !== 2)
    throw new VoiceModelFileError("not an RVC voice model: no speaker table (emb_g.weight)");
  const version = checkpoint.version ?? "v1";
  if (version !== "v1" && version !== "v2") throw new VoiceModelFileError(`unknown RVC version ${JSON.stringify(version)}`);
  const phone = weight["enc_p.emb_phone.weight"];
  const features = isTensor(phone) ? phone.shape[1] : undefined;
  if (features !== (version === "v2" ? 768 : 256))
    throw new VoiceModelFileError(`the file says RVC ${version} but its feature layer takes ${features ?? "no"} features`);
  const f0 = Number(checkpoint.f0 ?? 1);
  if (f0 !== 0 && f0 !== 1) throw new VoiceModelFileError(`unknown f0 flag ${JSON.stringify(checkpoint.f0)}`);
  const sr = config[17];
  const sampleRate =
    typeof sr === "string"
      ? RATES[sr]
      : [32000, 40000, 48000].includes(Number(sr))
        ? (Number(sr) as RvcCheckpointInfo["sampleRate"])
        : undefined;
  if (!sampleRate) throw new VoiceModelFileError(`unsupported RVC sample rate ${JSON.stringify(sr)} (32k, 40k or 48k)`);
  return { version, f0: f0 as 0 | 1, sampleRate, speakers: table.shape[0]! };
}

export interface ConvertRvcOptions {
  /** A python3 that can import torch and onnx (the caller installs them on demand). */
  python: string;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

/**
 * Converts a `.pth` to `outPath` with `python -m mixdown_voice.export_rvc`. A file the converter
 * refuses (its exit status 2) is a VoiceModelFileError with its reason; any other failure an Error
 * with the converter's last lines.
 */
export async function convertRvcCheckpoint(
  pthPath: string,
  outPath: string,
  options: ConvertRvcOptions,
): Promise<RvcCheckpointInfo> {
  const label = "the RVC converter";
  const { stdout } = await runPythonModule({
    python: options.python,
    module: "mixdown_voice.export_rvc",
    args: [pthPath, outPath],
    pythonPath: VOICE_PYTHON_PATH,
    label,
    fileError: (reason) => new VoiceModelFileError(reason),
    ...(options.env ? { env: options.env } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return lastJsonLine(stdout, label) as unknown as RvcCheckpointInfo;
}
