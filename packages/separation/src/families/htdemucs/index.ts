import type { SeparationFamily } from "../family.ts";
import { htdemucsDescriptor, type HtdemucsManifest } from "./manifest.ts";
import { HtdemucsModel } from "./model.ts";

/** HTDemucs (demucs v4) models and bags as demucs's CLI runs them (see the package README). */
export const htdemucsFamily: SeparationFamily<HtdemucsManifest, HtdemucsModel> = {
  ...htdemucsDescriptor,
  load: (manifest, baseDir, options) => HtdemucsModel.fromManifest(manifest, baseDir, options),
};
