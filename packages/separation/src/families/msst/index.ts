import { resolve } from "node:path";
import type { SeparationFamily } from "../family.ts";
import {
  msstOutputStemNames,
  parseMdx23cManifest,
  parseRoformerManifest,
  type Mdx23cManifest,
  type MsstManifest,
  type RoformerManifest,
} from "./manifest.ts";
import { MsstModel } from "./model.ts";

const load = (manifest: MsstManifest, baseDir: string, options: Parameters<typeof MsstModel.fromManifest>[2]) =>
  MsstModel.fromManifest(manifest, resolve(baseDir, manifest.file), options);

/** BS-RoFormer checkpoints of ZFTurbo/Music-Source-Separation-Training, run with its `demix`. */
export const bsRoformerFamily: SeparationFamily<MsstManifest, MsstModel> = {
  architecture: "bs_roformer",
  parseManifest: parseRoformerManifest,
  outputStems: msstOutputStemNames,
  load,
};

/** Mel-Band RoFormer checkpoints of MSST, run with its `demix`. */
export const melBandRoformerFamily: SeparationFamily<MsstManifest, MsstModel> = {
  architecture: "mel_band_roformer",
  parseManifest: parseRoformerManifest,
  outputStems: msstOutputStemNames,
  load,
};

/** MDX23C (TFC-TDF v3) checkpoints of MSST, run with its `demix`. */
export const mdx23cFamily: SeparationFamily<MsstManifest, MsstModel> = {
  architecture: "mdx23c",
  parseManifest: parseMdx23cManifest,
  outputStems: msstOutputStemNames,
  load,
};
