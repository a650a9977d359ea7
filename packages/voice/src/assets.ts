// What an RVC voice model needs besides its own file: the ContentVec features (768-d for v2,
// 256-d for v1) and, for f0, the RMVPE pitch model (else YIN). Neither ships with a default
// install; `./mixdown.sh models pull hubert|rmvpe` installs them. The API names what is missing in
// voice model records and refuses a conversion that could not run; the worker's engines throw
// MissingVoiceAssetError, a failure no retry can fix. Loads no onnxruntime.
import { stat } from "node:fs/promises";
import { resolve } from "node:path";

/** The command that installs the ContentVec models (both forms: `voices import-features` makes them from hubert_base.pt). */
export const INSTALL_CONTENTVEC = "./mixdown.sh models pull hubert";
/** The command that installs the RMVPE pitch model. */
export const INSTALL_RMVPE = "./mixdown.sh models pull rmvpe";

export type VoiceAssetName = "contentvec" | "contentvec-v1" | "rmvpe";

export interface MissingVoiceAsset {
  asset: VoiceAssetName;
  /** The setting naming where the server looks for it (relative to MODELS_DIR, or absolute). */
  setting: "VOICE_CONTENTVEC_MODEL" | "VOICE_CONTENTVEC_V1_MODEL" | "VOICE_RMVPE_MODEL";
  /** True when conversions with the model cannot run without it; false for a recommendation (RMVPE under VOICE_PITCH_METHOD=auto). */
  required: boolean;
  /** The command that installs it. */
  install: string;
  /** One sentence for a person: what is missing, what it is for, the command. */
  message: string;
}

/** A model file the engine needs is not installed: no retry helps until someone installs it. */
export class MissingVoiceAssetError extends Error {
  override readonly name = "MissingVoiceAssetError";
  constructor(
    readonly asset: VoiceAssetName,
    message: string,
  ) {
    super(message);
  }
}

export interface VoiceAssetSettings {
  modelsDir: string;
  /** VOICE_CONTENTVEC_MODEL */
  contentVec: string;
  /** VOICE_CONTENTVEC_V1_MODEL */
  contentVecV1: string;
  /** VOICE_RMVPE_MODEL */
  rmvpe: string;
  /** VOICE_PITCH_METHOD */
  pitchMethod: "auto" | "rmvpe" | "yin";
}

/** Which ContentVec a stored RVC model takes: `v1` when its metadata says so (`rvc.version`), else v2. */
export function rvcVersionOfMetadata(metadata: unknown): "v1" | "v2" {
  const rvc = (metadata as { rvc?: { version?: unknown } } | null)?.rvc;
  return rvc?.version === "v1" ? "v1" : "v2";
}

/** The sentence a person reads when ContentVec is missing, naming the command. */
export function contentVecMissingMessage(version: "v1" | "v2"): string {
  return version === "v1"
    ? `RVC v1 models need the 256-d ContentVec model (VOICE_CONTENTVEC_V1_MODEL), which is not installed: install it with \`${INSTALL_CONTENTVEC}\``
    : `RVC v2 models need the ContentVec model (VOICE_CONTENTVEC_MODEL), which is not installed: install it with \`${INSTALL_CONTENTVEC}\``;
}

/**
 * Answers, for a voice model row, which of the files its conversions use are not installed on
 * this machine (MODELS_DIR and the settings, as the worker resolves them). File checks are
 * cached for `cacheMs` (a list of models checks each file once), so a file installed while the
 * process runs counts within that time.
 */
export class VoiceAssets {
  readonly #paths: Record<VoiceAssetName, string>;
  readonly #checked = new Map<string, { at: number; present: Promise<boolean> }>();

  constructor(
    private readonly settings: VoiceAssetSettings,
    private readonly cacheMs = 2_000,
  ) {
    this.#paths = {
      contentvec: resolve(settings.modelsDir, settings.contentVec),
      "contentvec-v1": resolve(settings.modelsDir, settings.contentVecV1),
      rmvpe: resolve(settings.modelsDir, settings.rmvpe),
    };
  }

  #present(asset: VoiceAssetName): Promise<boolean> {
    const path = this.#paths[asset];
    const now = Date.now();
    const cached = this.#checked.get(path);
    if (cached && now - cached.at < this.cacheMs) return cached.present;
    const present = stat(path).then(
      (s) => s.isFile() && s.size > 0,
      () => false,
    );
    this.#checked.set(path, { at: now, present });
    return present;
  }

  /** Missing files for a model: none for native voices; ContentVec (required) and RMVPE (required only under VOICE_PITCH_METHOD=rmvpe) for RVC. */
  async missingFor(model: { architecture: string; metadata: unknown }): Promise<MissingVoiceAsset[]> {
    if (model.architecture !== "rvc") return [];
    const missing: MissingVoiceAsset[] = [];
    const version = rvcVersionOfMetadata(model.metadata);
    const contentVec = version === "v1" ? "contentvec-v1" : "contentvec";
    if (!(await this.#present(contentVec)))
      missing.push({
        asset: contentVec,
        setting: version === "v1" ? "VOICE_CONTENTVEC_V1_MODEL" : "VOICE_CONTENTVEC_MODEL",
        required: true,
        install: INSTALL_CONTENTVEC,
        message: contentVecMissingMessage(version),
      });
    const pitch = this.settings.pitchMethod;
    if (pitch !== "yin" && !(await this.#present("rmvpe")))
      missing.push({
        asset: "rmvpe",
        setting: "VOICE_RMVPE_MODEL",
        required: pitch === "rmvpe",
        install: INSTALL_RMVPE,
        message:
          pitch === "rmvpe"
            ? `VOICE_PITCH_METHOD=rmvpe: RVC conversions need the RMVPE pitch model (VOICE_RMVPE_MODEL), which is not installed: install it with \`${INSTALL_RMVPE}\`, or set VOICE_PITCH_METHOD=auto to use YIN`
            : `recommended: the RMVPE pitch model (VOICE_RMVPE_MODEL) is not installed, so conversions track pitch with YIN, which is less accurate on singing: install it with \`${INSTALL_RMVPE}\``,
      });
    return missing;
  }
}
