export { RNNOISE_BUILD, RNNOISE_FRAME, RNNOISE_RATE, RNNOISE_SCALE, RnnoiseChannel } from "./rnnoise.ts";
export { denoiseFile, type DenoiseFileOptions, type DenoiseFileResult } from "./denoise.ts";
export {
  isolateVocalFile,
  repairVocalFile,
  RepairModelProblem,
  type RepairPart,
  type RepairRunners,
  type RepairSeparation,
  type RepairVocalOptions,
} from "./repair-file.ts";
