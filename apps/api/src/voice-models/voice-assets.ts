import { resolve } from "node:path";
import type { Config } from "@mixdown/config";
import { VoiceAssets } from "@mixdown/voice/assets";

/** The files RVC models use, where the worker looks for them (MODELS_DIR and the VOICE_* settings). */
export function voiceAssetsOf(
  config: Pick<
    Config,
    "MODELS_DIR" | "VOICE_CONTENTVEC_MODEL" | "VOICE_CONTENTVEC_V1_MODEL" | "VOICE_RMVPE_MODEL" | "VOICE_PITCH_METHOD"
  >,
): VoiceAssets {
  return new VoiceAssets({
    modelsDir: resolve(config.MODELS_DIR),
    contentVec: config.VOICE_CONTENTVEC_MODEL,
    contentVecV1: config.VOICE_CONTENTVEC_V1_MODEL,
    rmvpe: config.VOICE_RMVPE_MODEL,
    pitchMethod: config.VOICE_PITCH_METHOD,
  });
}
