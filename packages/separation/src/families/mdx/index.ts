import { resolve } from "node:path";
import type { SeparationFamily } from "../family.ts";
import { mdxDescriptor, type MdxManifest } from "./manifest.ts";
import { MdxModel } from "./model.ts";

/** MDX-Net ONNX models as UVR and python-audio-separator run them (see the package README). */
export const mdxFamily: SeparationFamily<MdxManifest, MdxModel> = {
  ...mdxDescriptor,
  load: (manifest, baseDir, options) => MdxModel.fromManifest(manifest, resolve(baseDir, manifest.file), options),
};
