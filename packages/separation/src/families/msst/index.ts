import { resolve } from "node:path";
import type { SeparationFamily } from "../family.ts";
import { bsRoformerDescriptor, mdx23cDescriptor, melBandRoformerDescriptor, type MsstManifest } from "./manifest.ts";
import { MsstModel } from "./model.ts";

const load = (manifest: MsstManifest, baseDir: string, options: Parameters<typeof MsstModel.fromManifest>[2]) =>
  MsstModel.fromManifest(manifest, resolve(baseDir, manifest.file), options);

/** BS-RoFormer checkpoints of ZFTurbo/Music-Source-Separation-Training, run with its `demix`. */
export const bsRoformerFamily: SeparationFamily<MsstManifest, MsstModel> = { ...bsRoformerDescriptor, load };

/** Mel-Band RoFormer checkpoints of MSST, run with its `demix`. */
export const melBandRoformerFamily: SeparationFamily<MsstManifest, MsstModel> = { ...melBandRoformerDescriptor, load };

/** MDX23C (TFC-TDF v3) checkpoints of MSST, run with its `demix`. */
export const mdx23cFamily: SeparationFamily<MsstManifest, MsstModel> = { ...mdx23cDescriptor, load };
